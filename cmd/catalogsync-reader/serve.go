package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/graphql"
	"github.com/catalogsync/catalogsync/handlers/health"
	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// run opens the store, builds the handlers and serves until ctx ends,
// then lets requests in flight finish for --shutdown-grace.
func (c *readerCmd) run(ctx context.Context, from cli.Origins, stderr io.Writer) error {
	log := c.Logger(stderr)
	// With --tls-client-ca-file, /metrics and unknown paths need a certificate.
	hc, err := c.HTTP(httpserver.ContentOrProbe)
	if err != nil {
		return err
	}
	tlsR, err := hc.Reloader(log)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	store, where, err := c.open(ctx, from)
	if err != nil {
		return err
	}
	defer storage.Close(store)
	m := metrics.New()
	r := c.router(hc, m, m.Store(store), log)
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srv, ln := hc.Server(r, ln)
	if tlsR != nil {
		go tlsR.Run(ctx)
	}
	log.Info("serving", "addr", ln.Addr().String(), "store", where, "tls", tlsR != nil)
	errc := make(chan error, 1)
	go func() { errc <- httpserver.Serve(srv, ln, tlsR) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	log.Info("stopping; a second signal exits at once", "grace", c.ShutdownGrace)
	return httpserver.Shutdown(srv, c.ShutdownGrace, log)
}

// router serves the content, the probes and the metrics.
func (c *readerCmd) router(hc httpserver.Config, m *metrics.Metrics, store storage.Store, log *slog.Logger) chi.Router {
	r := hc.Router(m, log)
	health.New(store, health.WithLogger(log)).Mount(r)
	r.Method(http.MethodGet, "/metrics", m.Handler())
	var h *content.Handler
	// GraphQL reads catalogs through the content handler's cache.
	gql := graphql.New(graphql.OpenerFunc(func(ctx context.Context, name string) (*catalog.Catalog, error) {
		return h.Catalog(ctx, name)
	}), graphql.WithLogger(log), graphql.WithAnswerBudget(c.GraphQLBudget()))
	h = content.New(store, content.WithLogger(log), content.WithGraphQL(gql))
	h.Mount(r)
	return r
}

// open opens the store read-only. A directory must exist: a reader
// pointed at a wrong path would otherwise answer 404 for every catalog.
func (c *readerCmd) open(ctx context.Context, from cli.Origins) (storage.Store, string, error) {
	dir, err := c.LocalDir(from)
	if err != nil {
		return nil, "", err
	}
	if dir != "" {
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) { //nolint:gosec // G703: dir is the operator's setting
			return nil, "", cli.UsageError{Msg: fmt.Sprintf("store %s is not a directory: --store names the directory catalogsync sync or serve writes", dir)}
		}
	}
	return c.OpenReadOnly(ctx, from)
}
