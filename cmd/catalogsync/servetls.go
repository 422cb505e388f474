package main

import (
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/ui"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
)

// tlsReloader loads the TLS files when serve is given some (nil: plain
// HTTP).
func (f *serveFlags) tlsReloader(log *slog.Logger) (*tlsreload.Reloader, error) {
	if f.tls == (tlsreload.Files{}) {
		return nil, nil
	}
	tlsreload.LogTo(log)
	return tlsreload.New(f.tls, f.profile.Apply)
}

// serveListener serves HTTP, or HTTPS with r's certificates (r runs
// elsewhere, once for every listener).
func serveListener(srv *http.Server, ln net.Listener, r *tlsreload.Reloader) error {
	if r == nil {
		return srv.Serve(ln)
	}
	srv.TLSConfig = r.TLSConfig()
	return srv.ServeTLS(ln, "", "")
}

// openWithoutCert says, with a client CA, which requests need no client
// certificate: catalog content and the health probes (operator-controller
// and the kubelet present none), the webhook and event receivers
// (registries cannot; their secrets and tokens authenticate them) and,
// with --ui-open, the UI's pages and the one API read its live refresh
// makes. Anything else, unknown paths included, needs one.
func (f *serveFlags) openWithoutCert(r *http.Request) bool {
	// The path chi routes on, so what is checked is what is served.
	p := r.URL.RawPath
	if p == "" {
		p = r.URL.Path
	}
	switch {
	case strings.HasPrefix(p, "/catalogs/"), p == "/healthz", p == "/readyz",
		strings.HasPrefix(p, "/hooks/"), p == "/events":
		return true
	case !f.uiOpen || (r.Method != http.MethodGet && r.Method != http.MethodHead):
		return false
	}
	return p == "/" || p == ui.Prefix || strings.HasPrefix(p, ui.Prefix+"/") || p == api.Prefix+"/catalogs"
}
