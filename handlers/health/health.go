// Package health answers the probes: /healthz while the process serves
// HTTP, /readyz while its store answers and any extra check passes.
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/internal/problem"
	"github.com/catalogsync/catalogsync/storage"
)

// DefaultReadyTimeout bounds the store check of /readyz.
const DefaultReadyTimeout = 2 * time.Second

// readyKey is Stat'ed by /readyz. It never exists: "does not exist" is an
// answer, which is all readiness needs, and costs no read of content.
const readyKey = "catalogs/.ready"

// Handler answers /healthz and /readyz.
type Handler struct {
	store   storage.Store
	timeout time.Duration
	check   func() error
	log     *slog.Logger
}

// Option configures a Handler.
type Option func(*Handler)

// WithCheck adds a condition to /readyz besides the store (e.g. the
// ClusterCatalog informer has synced); its error text is served, so it
// must name no secret.
func WithCheck(f func() error) Option { return func(h *Handler) { h.check = f } }

// WithTimeout bounds how long /readyz waits for the store
// (DefaultReadyTimeout otherwise).
func WithTimeout(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.timeout = d
		}
	}
}

// WithLogger sets the logger for store failures (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// New returns the probes of a process reading store.
func New(store storage.Store, opts ...Option) *Handler {
	h := &Handler{store: store, timeout: DefaultReadyTimeout, log: slog.Default()}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Mount adds GET /healthz and /readyz to r.
func (h *Handler) Mount(r chi.Router) {
	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
}

// healthz answers while the process serves HTTP: a failing store must not
// get the pod restarted, only taken out of rotation (readyz).
func (h *Handler) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // the client left; nothing to tell it
}

// readyz answers 200 when the store answers a Stat within the timeout,
// 503 otherwise: without its store a replica can serve nothing.
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.check != nil {
		if err := h.check(); err != nil {
			h.log.Debug("not ready", "err", err)
			w.Header().Set("Retry-After", "1")
			problem.Write(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	_, err := h.store.Stat(ctx, readyKey)
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		detail := "the object store failed"
		if ctx.Err() != nil && r.Context().Err() == nil {
			detail = fmt.Sprintf("the object store did not answer within %v", h.timeout)
		}
		// The error may name endpoints and buckets: logged, not served.
		h.log.Warn("not ready", "err", err)
		w.Header().Set("Retry-After", "5")
		problem.Write(w, http.StatusServiceUnavailable, detail)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // the client left; nothing to tell it
}
