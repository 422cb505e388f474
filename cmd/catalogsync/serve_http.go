package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/events/tokenreview"
	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// serveEvents serves evr (the /events endpoint) on addr, over TLS when r
// is set; the returned function shuts it down.
func serveEvents(hc httpserver.Config, addr string, evr http.Handler, r *tlsreload.Reloader, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--events-addr: %w", err)
	}
	srv, ln := hc.Server(evr, ln)
	log.Info("serving events", "addr", ln.Addr().String(), "tls", r != nil)
	go func() {
		if err := httpserver.Serve(srv, ln, r); err != nil && err != http.ErrServerClosed {
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
