// Package content serves published catalogs over HTTP the way catalogd's
// catalog server does:
//
//	GET|HEAD <base>/{name}/api/v1/all                           the whole catalog
//	GET|HEAD <base>/{name}/api/v1/metas?schema=&package=&name=  a filtered part
//
// Bodies are catalog.jsonl lines, Content-Type application/jsonl. /metas
// is answered from the catalog's index by reading only the matching byte
// ranges of catalog.jsonl. Both are gzipped for clients that accept it
// once the body reaches DefaultGzipMinSize bytes (catalogd's gzhttp
// default), and carry Last-Modified (the publish time) and a strong ETag
// (the image digest, the query and the encoding), so clients revalidate
// with 304s. Identity answers, and every request with a Range, go through
// http.ServeContent as catalogd's /all does: its conditional requests,
// single and multipart ranges, and HEAD; gzip answers check the same
// conditions in this package and ignore Range.
//
// Where it differs from catalogd, on purpose: a name that is not a
// DNS-1123 subdomain and a query string that does not parse are 400, not
// 404 and ignored; HEAD gets exactly GET's headers (catalogd's HEAD of
// /all never says gzip, its HEAD of /metas no length); /metas honours
// Range and entity-tag conditions (catalogd's metas handler checks dates
// only); zstd, which catalogd's gzhttp prefers when a client offers it,
// is not offered (Go clients ask for gzip only).
//
// The handler keeps no state that matters: every replica reads the same
// store. Opened catalogs (their index, a few hundred KB for 15k objects) are
// kept in a bounded LRU cache and revalidated against the store's pointer
// at most once per PointerTTL, which bounds how long a replica serves a
// catalog after a newer one was published (see WithPointerTTL).
package content

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/klauspost/compress/gzip"

	"github.com/catalogsync/catalogsync/internal/acceptgzip"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

const (
	// DefaultBasePath is where catalogd serves catalogs.
	DefaultBasePath = "/catalogs"
	// DefaultCacheSize bounds the memory of cached indexes. A 15k-object
	// catalog takes about 1 MB, so this keeps dozens of large catalogs.
	DefaultCacheSize = 64 << 20
	// DefaultPointerTTL is how long a cached catalog is served without
	// checking its pointer again.
	DefaultPointerTTL = time.Second
	// DefaultGzipMinSize is the smallest body that is compressed:
	// catalogd wraps its server in gzhttp.GzipHandler, whose DefaultMinSize
	// is 1024 and which compresses bodies of at least that size.
	DefaultGzipMinSize = 1024

	// contentType is what catalogd sends for both endpoints.
	contentType = "application/jsonl"
	// storeTimeout bounds a shared catalog open, which outlives the
	// request that started it (see cache.get).
	storeTimeout = 30 * time.Second
)

// Handler serves catalog content from a store. It is safe for concurrent
// use; create it once and share it.
type Handler struct {
	store       storage.Store
	log         *slog.Logger
	basePath    string
	available   func(name string) bool
	gzipMinSize int64
	gzipLevel   int
	cache       *cache
	responses   *respCache
	router      chi.Router
	gzipPool    sync.Pool
	graphql     http.Handler
}

// Option configures a Handler.
type Option func(*config)

type config struct {
	cacheSize   int64
	respSize    int64
	ttl         time.Duration
	readGap     int64
	log         *slog.Logger
	basePath    string
	available   func(string) bool
	gzipMinSize int64
	gzipLevel   int
	graphql     http.Handler
}

// WithCacheSize bounds the bytes of opened catalogs (indexes) kept in
// memory; least recently used catalogs are dropped first. 0 disables the
// cache: every request then opens the catalog afresh.
func WithCacheSize(bytes int64) Option { return func(c *config) { c.cacheSize = max(bytes, 0) } }

// WithResponseCacheSize bounds the bytes of metas answers kept in memory
// (default DefaultResponseCacheSize; 0 disables it). One answer may take a
// quarter of it at most.
func WithResponseCacheSize(bytes int64) Option { return func(c *config) { c.respSize = max(bytes, 0) } }

// WithPointerTTL sets how long a cached catalog is served before its
// pointer is checked again (one Stat). A publish by any replica is visible
// to every request that starts more than ttl after it completed (plus the
// duration of one pointer check already in flight). 0 checks on every
// request.
func WithPointerTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = max(ttl, 0) } }

// WithReadGap lets a /metas query fetch matches separated by at most gap
// unmatched bytes with one ranged read (see catalog.Catalog.ReadGap). On
// object stores, where a request costs more than a few KB of transfer, a
// gap of 16-64 KB cuts requests; 0 (the default) reads exactly the matches.
func WithReadGap(gap int64) Option { return func(c *config) { c.readGap = max(gap, 0) } }

// WithLogger sets the logger for storage errors and client disconnects
// (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithBasePath sets the path prefix ServeHTTP and Mount serve under
// (DefaultBasePath otherwise); "" or "/" serves at the root.
func WithBasePath(p string) Option { return func(c *config) { c.basePath = p } }

// WithAvailability sets a hook asked before every request: a catalog it
// reports unavailable is answered 404, as catalogd does for a
// ClusterCatalog with availabilityMode Unavailable.
func WithAvailability(f func(name string) bool) Option {
	return func(c *config) { c.available = f }
}

// WithGraphQL serves h at <base>/{name}/api/v1/graphql for every method
// (h answers 405 itself), with chi's "name" URL parameter set.
func WithGraphQL(h http.Handler) Option { return func(c *config) { c.graphql = h } }

// WithGzipMinSize sets the smallest body gzipped for clients that accept
// it; a negative size disables compression.
func WithGzipMinSize(n int64) Option { return func(c *config) { c.gzipMinSize = n } }

// WithGzipLevel sets the compression level (gzip.BestSpeed to
// gzip.BestCompression; gzip.DefaultCompression, catalogd's, otherwise).
func WithGzipLevel(level int) Option { return func(c *config) { c.gzipLevel = level } }

// New returns a Handler serving the catalogs published in store.
func New(store storage.Store, opts ...Option) *Handler {
	cfg := config{
		cacheSize: DefaultCacheSize, respSize: DefaultResponseCacheSize, ttl: DefaultPointerTTL, basePath: DefaultBasePath,
		gzipMinSize: DefaultGzipMinSize, gzipLevel: gzip.DefaultCompression,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	cfg.basePath = "/" + strings.Trim(cfg.basePath, "/")
	if cfg.basePath == "/" {
		cfg.basePath = ""
	}
	if _, err := gzip.NewWriterLevel(io.Discard, cfg.gzipLevel); err != nil {
		cfg.log.Warn("content: invalid gzip level, using the default", "level", cfg.gzipLevel)
		cfg.gzipLevel = gzip.DefaultCompression
	}
	h := &Handler{
		store: store, log: cfg.log, basePath: cfg.basePath, available: cfg.available,
		gzipMinSize: cfg.gzipMinSize, gzipLevel: cfg.gzipLevel, graphql: cfg.graphql,
		cache:     newCache(store, cfg.cacheSize, cfg.ttl, cfg.readGap),
		responses: newRespCache(cfg.respSize),
	}
	h.cache.onStale = func(name string, err error) {
		h.log.Warn("content: store unreachable, serving the cached catalog", "catalog", name, "err", err)
	}
	h.router = h.routes(h.basePath)
	return h
}

// ServeHTTP serves requests whose path starts with the base path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

// Routes returns the routes relative to the base path, for a caller that
// mounts them itself: r.Mount("/catalogs", h.Routes()).
func (h *Handler) Routes() chi.Router { return h.routes("") }

// Mount mounts the routes on r under the base path.
func (h *Handler) Mount(r chi.Router) {
	if h.basePath == "" {
		r.Mount("/", h.Routes())
		return
	}
	r.Mount(h.basePath, h.Routes())
}

// Invalidate drops name's cached catalog, so the next request reads the
// pointer: a sync publishing in this process makes its result visible here
// at once instead of within the pointer TTL.
func (h *Handler) Invalidate(name string) { h.cache.remove(name, nil) }

func (h *Handler) routes(prefix string) chi.Router {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { httpError(w, http.StatusNotFound, "") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "")
	})
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		r.Method(m, prefix+"/{name}/api/v1/all", http.HandlerFunc(h.serveAll))
		r.Method(m, prefix+"/{name}/api/v1/metas", http.HandlerFunc(h.serveMetas))
	}
	if h.graphql != nil {
		r.Handle(prefix+"/{name}/api/v1/graphql", h.graphql)
	}
	return r
}

// Catalog returns name's published catalog through the handler's cache,
// for another handler serving the same catalogs (GraphQL). A catalog the
// availability hook refuses is storage.ErrNotExist.
func (h *Handler) Catalog(ctx context.Context, name string) (*catalog.Catalog, error) {
	if h.available != nil && !h.available(name) {
		return nil, fmt.Errorf("content: %s unavailable: %w", name, storage.ErrNotExist)
	}
	return h.cache.get(ctx, name)
}

// httpError writes a short text error, "404 Not Found" as catalogd does,
// with the reason appended when there is one.
func httpError(w http.ResponseWriter, code int, reason string) {
	msg := strconv.Itoa(code) + " " + http.StatusText(code)
	if reason != "" {
		msg += ": " + reason
	}
	// Headers set for the content must not describe the error body.
	for _, k := range []string{"Content-Encoding", "Content-Length", "ETag", "Last-Modified", "Accept-Ranges"} {
		w.Header().Del(k)
	}
	http.Error(w, msg, code)
}

// catalogFor resolves the request's catalog, answering the request itself
// (and returning nil) when it cannot be served.
func (h *Handler) catalogFor(w http.ResponseWriter, r *http.Request) *catalog.Catalog {
	// Every content response may differ by Accept-Encoding, errors
	// included, as with catalogd's gzhttp wrapper.
	w.Header().Set("Vary", "Accept-Encoding")
	// chi matches the raw path when it has escapes; the name is the
	// decoded segment, as net/http's ServeMux (catalogd) gives it.
	name, err := url.PathUnescape(chi.URLParam(r, "name"))
	if err != nil || !catalog.ValidName(name) {
		httpError(w, http.StatusBadRequest, "catalog name must be a DNS-1123 subdomain")
		return nil
	}
	if h.available != nil && !h.available(name) {
		httpError(w, http.StatusNotFound, "")
		return nil
	}
	c, err := h.cache.get(r.Context(), name)
	if err != nil {
		h.storeError(w, r, name, err)
		return nil
	}
	return c
}

// storeError answers a failure to read the store: 404 for a catalog never
// published, 500 for stored data this server cannot use (a retry will not
// help), 503 for the store itself failing.
func (h *Handler) storeError(w http.ResponseWriter, r *http.Request, name string, err error) {
	switch {
	case r.Context().Err() != nil:
		h.log.Debug("content: client went away", "catalog", name, "path", r.URL.Path, "err", err)
	case errors.Is(err, catalog.ErrCorrupt), errors.Is(err, catalog.ErrFormat), errors.Is(err, catalog.ErrIncomplete):
		h.log.Error("content: stored catalog unusable", "catalog", name, "path", r.URL.Path, "err", err)
		httpError(w, http.StatusInternalServerError, "")
	case errors.Is(err, storage.ErrNotExist):
		httpError(w, http.StatusNotFound, "")
	default:
		h.log.Error("content: storage error", "catalog", name, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "")
	}
}

// streamError logs a failure after the response was committed. The
// response is left short: the client sees fewer bytes than Content-Length,
// or a gzip stream without its trailer, never a complete-looking body.
func (h *Handler) streamError(r *http.Request, name string, cw *countWriter, err error) {
	if r.Context().Err() != nil || cw.err != nil {
		h.log.Debug("content: client went away", "catalog", name, "path", r.URL.Path, "sent", cw.n, "err", err)
		return
	}
	h.log.Error("content: storage error while streaming", "catalog", name, "path", r.URL.Path, "sent", cw.n, "err", err)
}

// lastModified is when the catalog was published (a pointer swap, as
// catalogd's file mtime changes when it stores a catalog), so switching
// back to older content still moves it forward.
func lastModified(c *catalog.Catalog) time.Time {
	if t := c.Pointer.PublishedAt; !t.IsZero() {
		return t
	}
	return c.Meta.Created
}

// etag builds a strong ETag: the image digest names the content, which
// never changes once stored; the query hash and the encoding tell the
// representations of one catalog apart.
func etag(c *catalog.Catalog, q *catalog.Query, gz bool) string {
	var b strings.Builder
	b.WriteString(`"`)
	b.WriteString(strings.Replace(c.Meta.Digest, ":", "-", 1))
	if q != nil {
		sum := sha256.Sum256([]byte(q.Schema + "\x00" + q.Package + "\x00" + q.Name))
		b.WriteString("-m")
		b.WriteString(hex.EncodeToString(sum[:8]))
	}
	if gz {
		b.WriteString("-gzip")
	}
	b.WriteString(`"`)
	return b.String()
}

// wantGzip decides the encoding before anything is written: the size is
// known (Meta.Size, or Count for a query), so no body is buffered to decide.
func (h *Handler) wantGzip(r *http.Request, size int64) bool {
	return h.gzipMinSize >= 0 && size > 0 && size >= h.gzipMinSize && acceptgzip.In(r.Header.Values("Accept-Encoding"))
}

func (h *Handler) gzipWriter(w io.Writer) *gzip.Writer {
	if z, ok := h.gzipPool.Get().(*gzip.Writer); ok {
		z.Reset(w)
		return z
	}
	z, _ := gzip.NewWriterLevel(w, h.gzipLevel) // level checked in New
	return z
}

// setHeaders writes the representation headers shared by 200 and 206;
// size < 0 leaves Content-Length out (gzip, whose length is not known
// before streaming).
func setHeaders(w http.ResponseWriter, tag string, mod time.Time, size int64, gz bool) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("ETag", tag)
	if !mod.IsZero() {
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	if size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(size, 10))
	}
}

func (h *Handler) serveAll(w http.ResponseWriter, r *http.Request) {
	h.serveCatalog(w, r, func(c *catalog.Catalog) error { return h.writeAll(w, r, c) })
}

// serveCatalog opens the requested catalog and answers with write, which
// returns an error only while nothing has been written. One retry: content
// read through a cached pointer may have been removed after a newer
// publish, which the retry then reads.
func (h *Handler) serveCatalog(w http.ResponseWriter, r *http.Request, write func(*catalog.Catalog) error) {
	for attempt := 0; ; attempt++ {
		c := h.catalogFor(w, r)
		if c == nil {
			return
		}
		err := write(c)
		if err == nil {
			return
		}
		if errors.Is(err, storage.ErrNotExist) {
			if attempt == 0 {
				h.cache.remove(c.Name, c)
				continue
			}
			// Published content without its catalog.jsonl.
			err = fmt.Errorf("%w: %w", catalog.ErrCorrupt, err)
		}
		h.storeError(w, r, c.Name, err)
		return
	}
}

// writeAll answers /all from c. It returns an error only while nothing has
// been written, so the caller can still answer with an error status.
// Ranges are answered in identity only, through http.ServeContent.
func (h *Handler) writeAll(w http.ResponseWriter, r *http.Request, c *catalog.Catalog) error {
	size, mod := c.Meta.Size, lastModified(c)
	if r.Header.Get("Range") != "" || !h.wantGzip(r, size) {
		w.Header().Set("ETag", etag(c, nil, false))
		return h.serveIdentity(w, r, c.Name, mod, true, &lazyBody{size: size, open: func(off int64) (io.ReadCloser, error) {
			return c.OpenRange(r.Context(), off, size-off)
		}})
	}
	tag := etag(c, nil, true)
	if code := checkConditions(r, tag, mod); code != 0 {
		notModified(w, code, tag, mod)
		return nil
	}
	var rc io.ReadCloser
	var err error
	if r.Method != http.MethodHead {
		// Opened before any header is written, so a missing or failing
		// object still gets an error status.
		if rc, err = c.All(r.Context()); err != nil {
			return err
		}
		defer rc.Close()
	}
	setHeaders(w, tag, mod, -1, true)
	w.WriteHeader(http.StatusOK)
	if rc == nil {
		return nil
	}
	cw := &countWriter{w: w}
	z := h.gzipWriter(cw)
	if _, err = io.Copy(z, rc); err == nil {
		err = z.Close()
	}
	if err != nil {
		h.streamError(r, c.Name, cw, err)
		return nil
	}
	h.gzipPool.Put(z)
	return nil
}

// metasParams are the only query parameters /metas accepts, as catalogd.
var metasParams = map[string]bool{"schema": true, "package": true, "name": true}

func parseMetasQuery(raw string) (catalog.Query, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return catalog.Query{}, errors.New("malformed query")
	}
	for k := range v {
		if !metasParams[k] {
			return catalog.Query{}, fmt.Errorf("unknown parameter %q: only schema, package and name are allowed", k)
		}
	}
	return catalog.Query{Schema: v.Get("schema"), Package: v.Get("package"), Name: v.Get("name")}, nil
}

func (h *Handler) serveMetas(w http.ResponseWriter, r *http.Request) {
	q, err := parseMetasQuery(r.URL.RawQuery)
	if err != nil {
		w.Header().Set("Vary", "Accept-Encoding")
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.serveCatalog(w, r, func(c *catalog.Catalog) error { return h.writeMetas(w, r, c, q) })
}

// writeMetas answers /metas from c's index. Like writeAll, it returns an
// error only while nothing has been written.
func (h *Handler) writeMetas(w http.ResponseWriter, r *http.Request, c *catalog.Catalog, q catalog.Query) error {
	_, size := c.Count(q)
	mod := lastModified(c)
	r = metasRequest(r)
	if !h.wantGzip(r, size) {
		w.Header().Set("ETag", etag(c, &q, false))
		return h.serveIdentity(w, r, c.Name, mod, false, &lazyBody{size: size, open: func(off int64) (io.ReadCloser, error) {
			if !h.responses.fits(size) {
				return streamFrom(r.Context(), off, func(ctx context.Context, w io.Writer) error { return c.Query(ctx, w, q) }), nil
			}
			body, err := h.cachedMetas(r.Context(), c, q, false)
			return bytesFrom(body, off), err
		}})
	}
	tag := etag(c, &q, true)
	if code := checkConditions(r, tag, mod); code != 0 {
		notModified(w, code, tag, mod)
		return nil
	}
	if r.Method != http.MethodHead && h.responses.fits(size) {
		body, err := h.cachedMetas(r.Context(), c, q, true)
		if err != nil {
			return err // nothing written: the caller answers or retries
		}
		setHeaders(w, tag, mod, int64(len(body)), true)
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(body); err != nil {
			h.log.Debug("client gone", "catalog", c.Name, "err", err)
		}
		return nil
	}
	setHeaders(w, tag, mod, -1, true)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return h.streamMetasGzip(w, r, c, q)
}

// streamMetasGzip streams a gzipped query too large for the response
// cache. No explicit WriteHeader: the status is committed by the first
// byte that reaches w, so a Query failing before it (its first ranged
// Get) can still be answered with an error.
func (h *Handler) streamMetasGzip(w http.ResponseWriter, r *http.Request, c *catalog.Catalog, q catalog.Query) error {
	cw := &countWriter{w: w}
	z := h.gzipWriter(cw)
	err := c.Query(r.Context(), z, q)
	if err == nil {
		err = z.Close()
	}
	switch {
	case err == nil:
		h.gzipPool.Put(z)
		return nil
	case cw.n == 0 && cw.err == nil:
		// Drop the headers of the body that was not sent; the caller
		// answers with an error or retries.
		for _, k := range []string{"Content-Type", "Content-Encoding", "Content-Length", "ETag", "Last-Modified"} {
			w.Header().Del(k)
		}
		return err
	}
	h.streamError(r, c.Name, cw, err)
	return nil
}

// cachedMetas returns the body of a query from (or filled into) the
// response cache, keyed by the digest, query and encoding: built once,
// compressed once, sent with its exact length.
func (h *Handler) cachedMetas(ctx context.Context, c *catalog.Catalog, q catalog.Query, gz bool) ([]byte, error) {
	key := strings.Join([]string{c.Pointer.Digest, q.Schema, q.Package, q.Name, strconv.FormatBool(gz)}, "\x00")
	// The fill is shared by every request missing the key at once, so no
	// single client's disconnect may cancel it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	return h.responses.load(ctx, key, func(ctx context.Context) ([]byte, error) {
		var buf bytes.Buffer
		if !gz {
			err := c.Query(ctx, &buf, q)
			return buf.Bytes(), err
		}
		z := h.gzipWriter(&buf)
		if err := c.Query(ctx, z, q); err != nil {
			return nil, err
		}
		if err := z.Close(); err != nil {
			return nil, err
		}
		h.gzipPool.Put(z)
		return buf.Bytes(), nil
	})
}

// countWriter counts what reached the client and keeps the first write
// error, which means the client is gone.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
