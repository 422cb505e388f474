// Package graphql serves catalogd's GraphQL endpoint,
//
//	POST <base>/{name}/api/v1/graphql   {"query": "..."}
//
// with the schema catalogd derives from a catalog's own objects (see
// gqlshape): the same queries give the same answers, errors included. The
// schema is built from the shape stored beside the index (content stored
// before it is scanned once, then cached), and objects are read through
// the index a page at a time, so a query costs its page, not the catalog,
// from a local store or object storage alike. Beyond catalogd, every list
// field takes package and name arguments, answered from the index.
//
// Where it differs from catalogd, on purpose: introspection shows those two
// arguments; an invalid catalog name is 400 with this server's message
// (catalogd lists the DNS-1123 rules broken); answers are not gzipped
// (catalogd's gzhttp wrapper compresses large ones); a catalog whose
// schemas collide is 500 as in catalogd, and the message in the log names
// the two schemas.
package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	gql "github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"
	"github.com/graphql-go/graphql/language/ast"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// DefaultTimeout bounds one query's execution, as catalogd's.
const DefaultTimeout = 5 * time.Second

// Answer budgets: the worst-case answer (see stats) one query may have,
// and that of all queries running at once. A page of the largest bundles
// of a community catalog with every field may reach 11 MiB; an answer is
// built whole, about four times its bytes at peak, so the defaults keep
// a 256 MiB pod under its limit however the queries come.
const (
	DefaultMaxAnswerBytes = 16 << 20
	DefaultInflightBytes  = 32 << 20
)

// maxSchemas bounds the built schemas kept (one per catalog).
const maxSchemas = 256

// Opener gives a published catalog by name; content.Handler is one, and
// reports unavailable catalogs as storage.ErrNotExist.
type Opener interface {
	Catalog(ctx context.Context, name string) (*catalog.Catalog, error)
}

// OpenerFunc adapts a function to Opener.
type OpenerFunc func(ctx context.Context, name string) (*catalog.Catalog, error)

// Catalog calls f.
func (f OpenerFunc) Catalog(ctx context.Context, name string) (*catalog.Catalog, error) {
	return f(ctx, name)
}

// Handler answers GraphQL queries. Safe for concurrent use.
type Handler struct {
	open    Opener
	log     *slog.Logger
	timeout time.Duration

	maxAnswer, inflight int64
	answers             *semaphore.Weighted

	mu      sync.Mutex
	schemas map[string]*built // by catalog name
	flights singleflight.Group
}

type built struct {
	digest string
	schema gql.Schema
	stats  *stats
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithTimeout sets the execution timeout of one query.
func WithTimeout(d time.Duration) Option { return func(h *Handler) { h.timeout = d } }

// WithAnswerBudget sets the largest worst-case answer of one query and of
// all queries running at once, in bytes (the latter at least the former).
func WithAnswerBudget(perQuery, inflight int64) Option {
	return func(h *Handler) { h.maxAnswer, h.inflight = perQuery, max(inflight, perQuery) }
}

// New returns a handler reading catalogs through open. It reads the
// catalog name from chi's "name" URL parameter.
func New(open Opener, opts ...Option) *Handler {
	h := &Handler{open: open, log: slog.Default(), timeout: DefaultTimeout, schemas: map[string]*built{},
		maxAnswer: DefaultMaxAnswerBytes, inflight: DefaultInflightBytes}
	for _, o := range opts {
		o(h)
	}
	h.answers = semaphore.NewWeighted(h.inflight)
	return h
}

// ServeHTTP answers one query in catalogd's order: method, name, body,
// query limits, then the catalog.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name, err := url.PathUnescape(chi.URLParam(r, "name"))
	if err != nil || !catalog.ValidName(name) {
		http.Error(w, "400 Bad Request: catalog name must be a DNS-1123 subdomain", http.StatusBadRequest)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	var body struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "Invalid request body", http.StatusBadRequest)
		return
	}
	switch {
	case body.Query == "":
		http.Error(w, "Query cannot be empty", http.StatusBadRequest)
		return
	case len(body.Query) > MaxQueryBytes:
		http.Error(w, "Query too large", http.StatusBadRequest)
		return
	}
	h.answer(r.Context(), w, name, body.Query)
}

// answer checks, runs and writes the answer to one query: checks of the
// text and the document first, then the library's validation, then the
// cost model, then execution under the answer budget.
func (h *Handler) answer(ctx context.Context, w http.ResponseWriter, name, query string) {
	doc, err := check(query)
	if err != nil {
		h.write(ctx, w, name, errorResult(err))
		return
	}
	b, err := h.schema(ctx, name)
	if err != nil {
		h.storeError(ctx, w, name, err)
		return
	}
	if v := gql.ValidateDocument(&b.schema, doc, nil); !v.IsValid {
		h.write(ctx, w, name, &gql.Result{Errors: v.Errors})
		return
	}
	cost := b.stats.estimate(doc)
	if cost > h.maxAnswer {
		h.write(ctx, w, name, errorResult(refuse("the answer could reach %s, more than the %s one query may have: ask for fewer objects (limit) or fields",
			mebibytes(cost), mebibytes(h.maxAnswer))))
		return
	}
	qctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if err := h.answers.Acquire(qctx, cost); err != nil {
		if ctx.Err() != nil {
			h.log.Debug("graphql: client went away", "catalog", name, "err", ctx.Err())
			return
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "503 Service Unavailable: too many GraphQL answers in progress", http.StatusServiceUnavailable)
		return
	}
	defer h.answers.Release(cost)
	// The library stops waiting when its context ends but not its work:
	// it gets one that does not end, resolvers the live one (see live),
	// so the budget is held until the work is done.
	res := gql.Execute(gql.ExecuteParams{Schema: b.schema, AST: doc, Context: detach(qctx)})
	if qctx.Err() != nil {
		res = errorResult(qctx.Err()) // catalogd's answer to a timeout
	}
	h.write(ctx, w, name, res)
}

// check applies catalogd's limits and this server's to a query.
func check(query string) (*ast.Document, error) {
	if err := checkNesting(query); err != nil {
		return nil, err
	}
	doc, err := parse(query)
	if err != nil {
		return nil, err
	}
	if err := checkComplexity(doc); err != nil {
		return nil, err
	}
	return doc, checkDocument(doc)
}

func (h *Handler) write(ctx context.Context, w http.ResponseWriter, name string, res *gql.Result) {
	if ctx.Err() != nil {
		h.log.Debug("graphql: client went away", "catalog", name, "err", ctx.Err())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(res); err != nil {
		h.log.Debug("graphql: client went away", "catalog", name, "err", err)
	}
}

// errorResult is a refusal as catalogd words its own: the message alone.
func errorResult(err error) *gql.Result {
	msg := strings.TrimPrefix(err.Error(), errRefused.Error()+": ")
	return &gql.Result{Errors: []gqlerrors.FormattedError{gqlerrors.FormatError(errors.New(msg))}}
}

func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

type liveKey struct{}

// detach returns a context that never ends, carrying ctx for live.
func detach(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), liveKey{}, ctx)
}

// live returns the request's context a resolver should heed.
func live(ctx context.Context) context.Context {
	if c, ok := ctx.Value(liveKey{}).(context.Context); ok {
		return c
	}
	return ctx
}

func (h *Handler) storeError(ctx context.Context, w http.ResponseWriter, name string, err error) {
	switch {
	case ctx.Err() != nil:
		h.log.Debug("graphql: client went away", "catalog", name, "err", err)
	case errors.Is(err, storage.ErrNotExist):
		http.Error(w, "404 Not Found", http.StatusNotFound)
	case errors.Is(err, catalog.ErrCorrupt), errors.Is(err, catalog.ErrFormat), errors.Is(err, catalog.ErrIncomplete), errors.Is(err, errSchema):
		h.log.Error("graphql: catalog unusable", "catalog", name, "err", err)
		http.Error(w, "500 Internal Server Error", http.StatusInternalServerError)
	default:
		h.log.Error("graphql: storage error", "catalog", name, "err", err)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "503 Service Unavailable", http.StatusServiceUnavailable)
	}
}

var errSchema = errors.New("graphql schema")

// schema returns the GraphQL schema of name's published catalog, building
// it once per digest.
func (h *Handler) schema(ctx context.Context, name string) (*built, error) {
	c, err := h.open.Catalog(ctx, name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	b := h.schemas[name]
	h.mu.Unlock()
	if b != nil && b.digest == c.Meta.Digest {
		return b, nil
	}
	v, err, _ := h.flights.Do(name+"@"+c.Meta.Digest, func() (any, error) {
		// Detached: others wait on this build.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return h.build(bctx, c)
	})
	if err != nil {
		return nil, err
	}
	b = v.(*built)
	h.mu.Lock()
	if len(h.schemas) >= maxSchemas {
		clear(h.schemas)
	}
	h.schemas[name] = b
	h.mu.Unlock()
	return b, nil
}

func (h *Handler) build(ctx context.Context, c *catalog.Catalog) (*built, error) {
	sh, err := c.GraphQLShape(ctx)
	if errors.Is(err, catalog.ErrNoGraphQL) {
		// Stored before shapes were: one scan, in this process only.
		h.log.Info("graphql: catalog stored without a graphql schema, scanning it once", "catalog", c.Name, "digest", c.Meta.Digest)
		sh, err = c.DiscoverGraphQL(ctx)
	}
	if err != nil {
		return nil, err
	}
	s, err := buildSchema(sh, pageLoader(c))
	if err != nil {
		return nil, errors.Join(errSchema, err)
	}
	return &built{digest: c.Meta.Digest, schema: s, stats: newStats(c, sh, s)}, nil
}

// pageLoader reads pages of c through its index.
func pageLoader(c *catalog.Catalog) loader {
	return func(ctx context.Context, q catalog.Query, offset, limit int) ([]map[string]json.RawMessage, error) {
		lines, err := c.Lines(ctx, q, offset, limit)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]json.RawMessage, 0, len(lines))
		for _, l := range lines {
			if o := byFieldName(l); o != nil {
				out = append(out, o)
			}
		}
		return out, nil
	}
}
