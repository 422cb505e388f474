// Package httpserver holds how catalogsync's binaries serve HTTP: one
// router with the metrics, request log, write-stall cut-off and client
// certificate check; servers with a connection cap and timeouts; HTTPS
// with reloaded certificates; a graceful shutdown.
package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/internal/connlimit"
	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/internal/tlsprofile"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/metrics"
)

// Config is how a binary's listeners hold connections and answer.
type Config struct {
	// MaxConns caps the connections each listener holds open.
	MaxConns int
	// IdleTimeout, HeaderTimeout and ReadTimeout are http.Server's.
	IdleTimeout, HeaderTimeout, ReadTimeout time.Duration
	// WriteStall abandons a response making no progress this long.
	WriteStall time.Duration
	// TLS names the certificate files (none: plain HTTP); Profile sets
	// the versions and ciphers offered.
	TLS     tlsreload.Files
	Profile tlsprofile.Profile
	// OpenWithoutCert says which requests need no client certificate
	// when TLS.ClientCA is set.
	OpenWithoutCert func(*http.Request) bool
}

// Router returns a chi router with the middleware: metrics and the
// request log (both read chi's route pattern after routing, so they sit
// on the top router), the write-stall cut-off and, with a client CA, the
// client certificate check.
func (c Config) Router(m *metrics.Metrics, log *slog.Logger) chi.Router {
	r := chi.NewRouter()
	r.Use(metrics.Observe(m.ObserveHTTP, RequestLog(log)), stall.Responses(c.WriteStall))
	if c.TLS.ClientCA != "" {
		open := c.OpenWithoutCert
		if open == nil {
			open = func(*http.Request) bool { return false }
		}
		r.Use(tlsreload.RequireClientCert(open))
	}
	return r
}

// Server returns the HTTP server for h on ln, and ln capped at MaxConns.
// Bodies (webhooks, at most 1 MiB) are read before they are
// authenticated: ReadTimeout keeps a client that trickles one from
// holding a connection for ever. Responses may be large and clients slow,
// so there is no WriteTimeout: the router's stall cut-off abandons only
// responses that make no progress.
func (c Config) Server(h http.Handler, ln net.Listener) (*http.Server, net.Listener) {
	capped := connlimit.New(ln, c.MaxConns)
	return &http.Server{Handler: h, ReadHeaderTimeout: c.HeaderTimeout, ReadTimeout: c.ReadTimeout,
		IdleTimeout: c.IdleTimeout, ConnState: capped.ConnState}, capped
}

// Reloader loads the TLS files when there are some (nil: plain HTTP).
// Run it once, for every listener.
func (c Config) Reloader(log *slog.Logger) (*tlsreload.Reloader, error) {
	if c.TLS == (tlsreload.Files{}) {
		return nil, nil
	}
	tlsreload.LogTo(log)
	return tlsreload.New(c.TLS, c.Profile.Apply)
}

// Serve serves HTTP on ln, or HTTPS with r's certificates.
func Serve(srv *http.Server, ln net.Listener, r *tlsreload.Reloader) error {
	if r == nil {
		return srv.Serve(ln)
	}
	srv.TLSConfig = r.TLSConfig()
	return srv.ServeTLS(ln, "", "")
}

// Shutdown stops accepting connections and lets requests in flight finish
// for grace; those still running then (a client that stopped reading, a
// trickled body) are closed. Taking the whole grace is not a failure.
func Shutdown(srv *http.Server, grace time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("requests still running after the shutdown grace; closing their connections", "grace", grace)
		return srv.Close()
	}
	return err
}

// RoutedPath is the path chi routes on, so what a check reads is what is
// served.
func RoutedPath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

// ContentOrProbe says whether r asks for catalog content or a probe: what
// clients without a certificate (operator-controller, the kubelet) reach
// under mutual TLS.
func ContentOrProbe(r *http.Request) bool {
	p := RoutedPath(r)
	return strings.HasPrefix(p, "/catalogs/") || p == "/healthz" || p == "/readyz"
}
