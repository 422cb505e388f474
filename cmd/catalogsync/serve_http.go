package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/events/tokenreview"
	"github.com/catalogsync/catalogsync/internal/connlimit"
	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// serveFlags picks what serve's HTTP side reads of the settings.
func (c *serveCmd) serveFlags() serveFlags {
	return serveFlags{Listening: c.Listening, uiOpen: c.UIOpen, writeStall: c.WriteStall, readLimit: c.ReadLimit,
		tls: tlsreload.Files{Cert: c.TLSCert, Key: c.TLSKey, ClientCA: c.TLSClientCA}}
}

// router returns a chi router with serve's middleware: metrics and the
// request log (both read chi's route pattern after routing, so they sit
// on the top router), the write-stall cut-off and, with a client CA, the
// client certificate check.
func (f *serveFlags) router(m *metrics.Metrics, log *slog.Logger) chi.Router {
	r := chi.NewRouter()
	r.Use(metrics.Observe(m.ObserveHTTP, api.RequestLog(log)), stall.Responses(f.writeStall))
	if f.tls.ClientCA != "" {
		r.Use(tlsreload.RequireClientCert(f.openWithoutCert))
	}
	return r
}

// server returns the HTTP server for h on ln, and ln capped at
// --max-connections. Bodies (webhooks, at most 1 MiB) are read before they
// are authenticated: ReadTimeout keeps a client that trickles one from
// holding a connection for ever. Responses may be large and clients slow,
// so there is no WriteTimeout: stall.Responses abandons only responses
// that make no progress.
func (f *serveFlags) server(h http.Handler, ln net.Listener) (*http.Server, net.Listener) {
	capped := connlimit.New(ln, f.MaxConns)
	return &http.Server{Handler: h, ReadHeaderTimeout: f.HeaderTimeout, ReadTimeout: f.readLimit,
		IdleTimeout: f.IdleTimeout, ConnState: capped.ConnState}, capped
}

// serveEvents serves evr (the /events endpoint) on addr, over TLS when r
// is set; the returned function shuts it down.
func (f *serveFlags) serveEvents(addr string, evr http.Handler, r *tlsreload.Reloader, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--events-addr: %w", err)
	}
	srv, ln := f.server(evr, ln)
	log.Info("serving events", "addr", ln.Addr().String(), "tls", r != nil)
	go func() {
		if err := serveListener(srv, ln, r); err != nil && err != http.ErrServerClosed {
			log.Error("events listener", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("events listener shutdown", "err", err)
		}
	}, nil
}

// eventsOptions builds the /events handler's options: its outcomes go to
// the webhook metric, and an OIDC audience gets a TokenReview client of the
// cluster (kubeconfig, else in-cluster).
func eventsOptions(cfg events.Config, kubeconfig string, m *metrics.Metrics, log *slog.Logger) ([]events.Option, error) {
	opts := []events.Option{events.WithLogger(log), events.WithOutcome(m.Webhook)}
	if cfg.Audience != "" {
		restCfg, err := kubeclient.Config(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("events.audience: %w", err)
		}
		tr, err := tokenreview.NewForConfig(restCfg, cfg.Audience)
		if err != nil {
			return nil, fmt.Errorf("events.audience: %w", err)
		}
		opts = append(opts, events.WithTokenReviewer(tr))
	}
	if cfg.Token == "" && cfg.Audience == "" && cfg.Insecure {
		log.Warn("/events accepts unauthenticated events (events.insecure): anyone who reaches it can trigger syncs")
	}
	return opts, nil
}

// configured reports whether a catalog is in set, for the content
// handler: names outside it are answered 404 without a store lookup.
func configured(set engine.CatalogSet) func(string) bool {
	return func(name string) bool {
		return slices.ContainsFunc(set.Catalogs(), func(c catalogspec.Catalog) bool { return c.Name == name })
	}
}

// shutdown stops accepting connections and lets requests in flight finish
// for grace; those still running then (a client that stopped reading, a
// trickled body) are closed. Taking the whole grace is not a failure.
func shutdown(srv *http.Server, grace time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("requests still running after the shutdown grace; closing their connections", "grace", grace)
		return srv.Close()
	}
	return err
}
