package main

import (
	"net/http"
	"strings"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/ui"
	"github.com/catalogsync/catalogsync/internal/httpserver"
)

// openWithoutCert says, with a client CA, which requests need no client
// certificate: catalog content and the health probes (operator-controller
// and the kubelet present none), the webhook and event receivers
// (registries cannot; their secrets and tokens authenticate them) and,
// with --ui-open, the UI's pages and the one API read its live refresh
// makes. Anything else, unknown paths included, needs one.
func openWithoutCert(uiOpen bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		p := httpserver.RoutedPath(r)
		switch {
		case httpserver.ContentOrProbe(r), strings.HasPrefix(p, "/hooks/"), p == "/events":
			return true
		case !uiOpen || (r.Method != http.MethodGet && r.Method != http.MethodHead):
			return false
		}
		return p == "/" || p == ui.Prefix || strings.HasPrefix(p, ui.Prefix+"/") || p == api.Prefix+"/catalogs"
	}
}
