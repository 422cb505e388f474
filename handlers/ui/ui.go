// Package ui is a read-only catalog browser served under /ui/: the
// catalogs with their live sync progress, a catalog's packages (with
// search over package and bundle names), a package's channels with their
// upgrade graphs drawn, a bundle's properties, and what the last publish
// changed.
//
// Every page is built from the stored index and the byte ranges of the
// objects it shows (catalog.Catalog.Query), never from the whole catalog
// in memory; only "what changed" streams both catalogs once, and its
// small result is cached. Catalog content is untrusted: templates escape
// it, pages carry a Content-Security-Policy that allows only this
// package's own scripts, and icons are served only as declared raster
// image types (SVG with a policy that runs nothing).
//
// Like the content API, the pages are open to whoever reaches the server:
// they show the same catalogs /catalogs/{name}/api/v1/all serves, and the
// sync state GET /api/v1/catalogs shows.
package ui

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// Prefix is where the pages live.
const Prefix = "/ui"

const (
	// maxRead bounds the bytes one page reads from a catalog (a package's
	// bundles, say): pages refuse more rather than hold it in memory.
	maxRead = 64 << 20
	// pageSize is how many packages a catalog page lists.
	pageSize = 50
	// storeTimeout bounds the store reads of one page.
	storeTimeout = 20 * time.Second
	// pointerTTL is how long an opened catalog is used before its
	// pointer is read again.
	pointerTTL = time.Second
)

// pagePolicy is every page's Content-Security-Policy: this package's
// scripts and styles only, images from here (icons), XHR to the API.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*.js assets/*.css assets/*.svg assets/*.LICENSE
var assetFS embed.FS

// CatalogLister returns the configured catalogs (engine.StaticCatalogs, or
// the cluster's ClusterCatalogs), as the REST API takes them.
type CatalogLister interface {
	Catalogs() []catalogspec.Catalog
}

// Handler serves the pages. Create it with New; it is safe for concurrent
// use.
type Handler struct {
	store     storage.Store
	catalogs  CatalogLister
	log       *slog.Logger
	available func(string) bool
	apiPath   string
	assets    http.Handler
	root      chi.Router

	mu      sync.Mutex
	opened  map[string]*openCatalog
	rows    *lru.Cache[string, packageRow]
	diffs   *lru.Cache[string, *changes]
	diffMu  sync.Mutex // one diff computed at a time: each streams two catalogs
	warming sync.Map   // catalog and digest whose diff is being precomputed
}

type openCatalog struct {
	c       *catalog.Catalog
	checked time.Time
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger for store failures (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithAvailability hides catalogs f reports unavailable, as the content
// handler does (a ClusterCatalog with availabilityMode Unavailable).
func WithAvailability(f func(string) bool) Option { return func(h *Handler) { h.available = f } }

// templates are parsed at the first page shown, not at every start: most
// processes never show one.
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
})

// New returns a Handler showing catalogs' published content from store.
func New(store storage.Store, catalogs CatalogLister, opts ...Option) *Handler {
	h := &Handler{store: store, catalogs: catalogs, apiPath: "/api/v1/catalogs", opened: map[string]*openCatalog{}}
	for _, o := range opts {
		o(h)
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.rows, _ = lru.New[string, packageRow](20000)
	// A diff of catalogs that differ entirely lists every name: keep few.
	h.diffs, _ = lru.New[string, *changes](8)
	sub, _ := fs.Sub(assetFS, "assets")
	h.assets = http.StripPrefix(Prefix+"/assets/", http.FileServerFS(sub))
	h.root = chi.NewRouter()
	h.Mount(h.root)
	return h
}

// Mount adds the pages under Prefix, and at / a page linking to them.
func (h *Handler) Mount(r chi.Router) {
	r.Get("/", h.serveRoot)
	r.Mount(Prefix, h.routes())
}

// ServeHTTP serves the pages at their paths, for tests and callers
// without a router.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }

func (h *Handler) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(secure)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { h.errorPage(w, http.StatusNotFound, "no such page") })
	r.Get("/", h.serveCatalogs)
	r.Get("/assets/*", h.serveAsset)
	r.Get("/catalogs/{name}/", h.serveCatalog)
	r.Get("/catalogs/{name}/changes", h.serveChanges)
	r.Get("/catalogs/{name}/packages/{pkg}/", h.servePackage)
	r.Get("/catalogs/{name}/packages/{pkg}/graph.mmd", h.serveMermaid)
	r.Get("/catalogs/{name}/packages/{pkg}/icon", h.serveIcon)
	r.Get("/catalogs/{name}/packages/{pkg}/bundles/{bundle}", h.serveBundle)
	r.Get("/catalogs/{name}/packages/{pkg}/bundles/", h.serveBundle) // ?name= (see bundleURL)
	return r
}

// secure sets the headers every answer carries: nothing is sniffed into
// another type, framed, or allowed to run scripts but ours.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", pagePolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	h.assets.ServeHTTP(w, r)
}

func (h *Handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.render(w, "root.html", nil)
	})).ServeHTTP(w, r)
}

// param is a decoded path segment. chi routes on the escaped path when
// the request has one (RawPath: the path has escapes its decoded form
// does not imply), and on the decoded path otherwise: only the first
// needs decoding, or a name holding "%41" would be decoded twice.
func param(r *http.Request, key string) (string, bool) {
	v := chi.URLParam(r, key)
	if r.URL.RawPath == "" {
		return v, true
	}
	v, err := url.PathUnescape(v)
	return v, err == nil
}

// catalogFor opens the request's catalog, answering with an error page
// (and returning nil) when it cannot.
func (h *Handler) catalogFor(w http.ResponseWriter, r *http.Request) *catalog.Catalog {
	name, ok := param(r, "name")
	if !ok || !catalog.ValidName(name) {
		h.errorPage(w, http.StatusBadRequest, "a catalog name is a DNS-1123 subdomain")
		return nil
	}
	if !h.listed(name) {
		h.errorPage(w, http.StatusNotFound, "no such catalog")
		return nil
	}
	c, err := h.open(r.Context(), name)
	if err != nil {
		h.storeError(w, r, err)
		return nil
	}
	return c
}

// serveStatus is the page of a configured catalog with nothing to show
// (not published yet, or its content unreadable): its sync state, which
// the page's script reads from the API as the catalogs page does.
func (h *Handler) serveStatus(w http.ResponseWriter, code int, name, note string) {
	image := ""
	for _, c := range h.catalogs.Catalogs() {
		if c.Name == name {
			image = c.Image.String()
		}
	}
	h.renderCode(w, code, "status.html", map[string]any{"Catalog": name, "Image": image, "Note": note,
		"API": h.apiPath + "/" + url.PathEscape(name)})
}

// listed reports whether name is a configured, available catalog: content
// left in the store by a catalog no longer configured is not shown.
func (h *Handler) listed(name string) bool {
	if h.available != nil && !h.available(name) {
		return false
	}
	for _, c := range h.catalogs.Catalogs() {
		if c.Name == name {
			return true
		}
	}
	return false
}

// open returns name's published catalog, reading its pointer again at
// most every pointerTTL. The map holds published catalogs only.
func (h *Handler) open(ctx context.Context, name string) (*catalog.Catalog, error) {
	h.mu.Lock()
	oc := h.opened[name]
	h.mu.Unlock()
	if oc != nil && time.Since(oc.checked) < pointerTTL {
		return oc.c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	p, _, err := catalog.Current(ctx, h.store, name)
	if err != nil {
		return nil, err
	}
	c := (*catalog.Catalog)(nil)
	if oc != nil && oc.c.Meta.Digest == p.Digest {
		// A copy: other requests are reading the cached one.
		cc := *oc.c
		c = &cc
	} else if c, err = catalog.OpenDigest(ctx, h.store, name, p.Digest); err != nil {
		return nil, err
	}
	c.Pointer = p
	h.mu.Lock()
	h.opened[name] = &openCatalog{c: c, checked: time.Now()}
	h.mu.Unlock()
	return c, nil
}

func (h *Handler) storeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil:
	case errors.Is(err, storage.ErrNotExist):
		h.errorPageBack(w, http.StatusNotFound, "not published", r)
	case errors.Is(err, errTooLarge):
		h.errorPage(w, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, catalog.ErrCorrupt), errors.Is(err, catalog.ErrFormat), errors.Is(err, catalog.ErrIncomplete):
		h.log.Error("ui: stored catalog unusable", "path", r.URL.Path, "err", err)
		h.errorPage(w, http.StatusInternalServerError, "stored catalog unusable")
	default:
		h.log.Error("ui: storage error", "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		h.errorPage(w, http.StatusServiceUnavailable, "store unavailable")
	}
}

func (h *Handler) errorPage(w http.ResponseWriter, code int, msg string) {
	h.errorPageBack(w, code, msg, nil)
}

// errorPageBack is errorPage linking to the page of the request's
// catalog, when it names a configured one.
func (h *Handler) errorPageBack(w http.ResponseWriter, code int, msg string, r *http.Request) {
	back := ""
	if r != nil {
		if name, ok := param(r, "name"); ok && catalog.ValidName(name) && h.listed(name) && r.URL.Path != catalogURL(name) {
			back = catalogURL(name)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = templates().ExecuteTemplate(w, "error.html", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": msg, "Back": back})
}

// render executes a template into a buffer first, so a failing template
// never sends half a page.
func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	h.renderCode(w, http.StatusOK, name, data)
}

// renderCode is render answering with code.
func (h *Handler) renderCode(w http.ResponseWriter, code int, name string, data any) {
	var b strings.Builder
	if err := templates().ExecuteTemplate(&b, name, data); err != nil {
		h.log.Error("ui: template", "template", name, "err", err)
		h.errorPage(w, http.StatusInternalServerError, "page failed")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, b.String()) // the client left; nothing to tell it
}
