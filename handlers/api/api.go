// Package api serves catalogsync's REST API, described by the OpenAPI
// document in package openapi (served at /openapi.yaml):
//
//	GET  /api/v1/catalogs              every configured catalog's state
//	GET  /api/v1/catalogs/{name}       one catalog's state
//	POST /api/v1/catalogs/{name}/sync  ask for a sync: 202 + Location
//	GET  /api/v1/operations/{id}       one sync operation
//	GET  /openapi.yaml, /healthz, /readyz, and /metrics when given
//
// A catalog's state joins what is published (the stored pointer and last
// poll: level-based, the same on every replica) with what this replica's
// engine is doing (running and queued operations, the last result, the
// next retry). Errors are RFC 9457 problem details.
//
// Reads are open. POST needs "Authorization: Bearer <token>" of the token
// given WithToken; without a token POST is refused (401) unless the handler
// is built WithOpen(true), which lets anyone who reaches the API trigger
// syncs (each costs at most a manifest HEAD when nothing changed, since a
// trigger never chooses what is pulled).
//
// Requests are checked by hand, not by validating them against the
// OpenAPI document at runtime: the checks are few and give precise
// problem details, and the tests check every exchange against the
// document: responses must match it, requests it rejects must get a 4xx,
// and a 400 must be for a request it rejects. kin-openapi stays out of the
// production binary.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/health"
	"github.com/catalogsync/catalogsync/openapi"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// Prefix is where the API routes live.
const Prefix = "/api/v1"

const (
	// storeTimeout bounds the store reads of one API request, so a store
	// that hangs (an SDK retrying) answers 503 instead of holding the
	// client forever.
	storeTimeout = 10 * time.Second
	// listConcurrency bounds the catalogs read from the store at once
	// for a list: each costs two or three small reads.
	listConcurrency = 8
)

// Engine is what the API needs of the sync engine ([*engine.Engine]).
type Engine interface {
	Trigger(ctx context.Context, name, reason string) (engine.Operation, error)
	State(name string) (engine.CatalogState, bool)
	Operation(id string) (engine.Operation, bool)
}

// CatalogLister returns the configured catalogs ([engine.StaticCatalogs], or
// the cluster's ClusterCatalogs). It is called on every request.
type CatalogLister interface {
	Catalogs() []catalogspec.Catalog
}

// Handler serves the API. Create it with New; it is safe for concurrent
// use.
type Handler struct {
	engine       Engine
	catalogs     CatalogLister
	store        storage.Store
	log          *slog.Logger
	baseURL      string
	contentPath  string
	tokenSum     *[sha256.Size]byte
	open         bool
	readyTimeout time.Duration
	readyCheck   func() error
	metrics      http.Handler
	spec         []byte
	root         chi.Router
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger for store failures (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithBaseURL sets the external base URL catalogs are served at
// ("https://catalogsync.example.test"), for the servingURL of each
// catalog. Without it the URL is built from the request's Host, which is
// wrong behind a proxy that rewrites it.
func WithBaseURL(u string) Option { return func(h *Handler) { h.baseURL = strings.TrimRight(u, "/") } }

// WithContentBasePath sets the path the content handler serves catalogs
// under (content.DefaultBasePath otherwise), for servingURL.
func WithContentBasePath(p string) Option {
	return func(h *Handler) { h.contentPath = "/" + strings.Trim(p, "/") }
}

// WithToken requires "Authorization: Bearer <token>" on POST requests. The
// comparison takes the same time whatever the token sent. An empty token
// sets none: POST is then refused unless WithOpen(true).
func WithToken(token string) Option {
	return func(h *Handler) {
		if token == "" {
			h.tokenSum = nil
			return
		}
		sum := sha256.Sum256([]byte(token))
		h.tokenSum = &sum
	}
}

// WithOpen with true accepts POST requests without credentials when no token
// is set: anyone who reaches the API can trigger syncs.
func WithOpen(open bool) Option { return func(h *Handler) { h.open = open } }

// WithReadyCheck adds a condition to /readyz besides the store (e.g. the
// ClusterCatalog informer has synced); its error text is served, so it
// must name no secret.
func WithReadyCheck(f func() error) Option { return func(h *Handler) { h.readyCheck = f } }

// WithReadyTimeout bounds how long /readyz waits for the store
// (health.DefaultReadyTimeout otherwise).
func WithReadyTimeout(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.readyTimeout = d
		}
	}
}

// WithMetrics serves m (a Prometheus handler) at GET /metrics.
func WithMetrics(m http.Handler) Option { return func(h *Handler) { h.metrics = m } }

// New returns a Handler answering from engine, catalogs and store.
func New(engine Engine, catalogs CatalogLister, store storage.Store, opts ...Option) *Handler {
	h := &Handler{
		engine: engine, catalogs: catalogs, store: store,
		contentPath: content.DefaultBasePath,
		spec:        openapi.Spec(),
	}
	for _, o := range opts {
		o(h)
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.contentPath == "/" {
		h.contentPath = ""
	}
	root := chi.NewRouter()
	root.NotFound(notFound)
	root.MethodNotAllowed(methodNotAllowed(root))
	h.Mount(root)
	h.root = root
	return h
}

// ServeHTTP serves every route of the handler at its documented path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }

// Mount adds the handler's routes to r: the API under Prefix (with its own
// problem+json 404 and 405), /openapi.yaml, /healthz, /readyz and, when
// configured, /metrics.
func (h *Handler) Mount(r chi.Router) {
	r.Mount(Prefix, h.apiRoutes())
	r.Get("/openapi.yaml", h.serveSpec)
	health.New(h.store, health.WithCheck(h.readyCheck), health.WithTimeout(h.readyTimeout), health.WithLogger(h.log)).Mount(r)
	if h.metrics != nil {
		r.Method(http.MethodGet, "/metrics", h.metrics)
	}
}

func (h *Handler) apiRoutes() chi.Router {
	r := chi.NewRouter()
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed(r))
	r.Group(func(r chi.Router) {
		r.Use(acceptJSON)
		r.Get("/catalogs", h.listCatalogs)
		r.Get("/catalogs/{name}", h.getCatalog)
		r.Post("/catalogs/{name}/sync", h.syncCatalog)
		r.Get("/operations/{id}", h.getOperation)
	})
	return r
}

func (h *Handler) serveSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(h.spec)
}

// authorized checks the bearer token; without one, only an open handler
// accepts.
func (h *Handler) authorized(r *http.Request) bool {
	if h.tokenSum == nil {
		return h.open
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	// Hashing first makes the comparison independent of the length of
	// what was sent, which ConstantTimeCompare alone is not.
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) == 1
}
