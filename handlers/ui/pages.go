package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

var errTooLarge = errors.New("too much catalog data for one page")

// read returns the lines of the objects matching q, refusing more than
// maxRead bytes before reading any.
func read(ctx context.Context, c *catalog.Catalog, q catalog.Query) ([]byte, error) {
	_, n := c.Count(q)
	if n > maxRead {
		return nil, fmt.Errorf("%w: %d bytes", errTooLarge, n)
	}
	if n == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.Grow(int(n))
	err := c.Query(ctx, &b, q)
	return b.Bytes(), err
}

func catalogURL(c string) string { return Prefix + "/catalogs/" + url.PathEscape(c) + "/" }
func packageURL(c, p string) string {
	return catalogURL(c) + "packages/" + url.PathEscape(p) + "/"
}

// bundleURL is a bundle's page. "." and ".." are dot segments that a
// browser resolves away however they are escaped: those names go in the
// query.
func bundleURL(c, p, b string) string {
	if b == "." || b == ".." {
		return packageURL(c, p) + "bundles/?" + url.Values{"name": {b}}.Encode()
	}
	return packageURL(c, p) + "bundles/" + url.PathEscape(b)
}

// catalogItem is one row of the catalogs page.
type catalogItem struct {
	Name, Image, Digest, StoreError string
	PublishedAt                     time.Time
	Size                            int64
	Packages, Bundles, Channels     int
}

func (h *Handler) serveCatalogs(w http.ResponseWriter, r *http.Request) {
	var items []catalogItem
	for _, cfg := range h.catalogs.Catalogs() {
		if h.available != nil && !h.available(cfg.Name) {
			continue
		}
		it := catalogItem{Name: cfg.Name, Image: cfg.Image.String()}
		c, err := h.open(r.Context(), cfg.Name)
		switch {
		case err == nil:
			it.Digest, it.PublishedAt, it.Size = c.Meta.Digest, c.Pointer.PublishedAt, c.Meta.Size
			it.Packages, it.Bundles, it.Channels = c.Meta.Schemas["olm.package"], c.Meta.Schemas["olm.bundle"], c.Meta.Schemas["olm.channel"]
			h.warmChanges(c)
		case errors.Is(err, storage.ErrNotExist):
		default:
			h.log.Warn("ui: catalog unreadable", "catalog", cfg.Name, "err", err)
			it.StoreError = "stored catalog unreadable"
		}
		items = append(items, it)
	}
	h.render(w, "catalogs.html", map[string]any{"Catalogs": items, "API": h.apiPath})
}

// packageRow is one package of a catalog page.
type packageRow struct {
	Name, DisplayName, Description, DefaultChannel, Latest, Deprecated string
	Channels, Bundles                                                  int
	Icon                                                               bool
}

// row reads what a catalog page shows of pkg: its olm.package object, its
// channels, the head of its default channel (the bundle a subscription
// to the package gets, whose version and CSV metadata the row shows) and
// its deprecations; counts come from the index. That is four small reads,
// never all of the package's bundles. Rows are cached by digest: content
// never changes.
func (h *Handler) row(ctx context.Context, c *catalog.Catalog, pkg string) (packageRow, error) {
	key := c.Meta.Digest + "\x00" + c.Name + "\x00" + pkg
	if r, ok := h.rows.Get(key); ok {
		return r, nil
	}
	p, err := readPackage(ctx, c, pkg)
	if err != nil {
		return packageRow{}, err
	}
	row := packageRow{Name: pkg, DefaultChannel: p.DefaultChannel, Description: markdownText(p.Description, 300),
		Icon: p.Icon != nil && iconType(p.Icon.MediaType) != ""}
	row.Channels, _ = c.Count(catalog.Query{Schema: "olm.channel", Package: pkg})
	row.Bundles, _ = c.Count(catalog.Query{Schema: "olm.bundle", Package: pkg})
	ch, err := read(ctx, c, catalog.Query{Schema: "olm.channel", Package: pkg, Name: p.DefaultChannel})
	if err != nil {
		return packageRow{}, err
	}
	var def fbcChannel
	if i := bytes.IndexByte(ch, '\n'); i > 0 && json.Unmarshal(ch[:i], &def) == nil {
		g := channelGraph{}
		g.markHeads(def)
		if len(g.Heads) > 0 {
			b, err := read(ctx, c, catalog.Query{Schema: "olm.bundle", Package: pkg, Name: g.Heads[0]})
			if err != nil {
				return packageRow{}, err
			}
			row.Latest = bundleVersion(b)
			if m, ok := csvSummary(b); ok {
				row.DisplayName = m.DisplayName
				if row.Description == "" {
					row.Description = markdownText(m.Description, 300)
				}
			}
		}
	}
	dep, err := readDeprecations(ctx, c, pkg)
	if err != nil {
		return packageRow{}, err
	}
	row.Deprecated = dep.pkg
	h.rows.Add(key, row)
	return row, nil
}

func readPackage(ctx context.Context, c *catalog.Catalog, pkg string) (fbcPackage, error) {
	var p fbcPackage
	b, err := read(ctx, c, catalog.Query{Schema: "olm.package", Name: pkg})
	if err != nil || len(b) == 0 {
		return p, err
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%w: package %s: %v", catalog.ErrCorrupt, pkg, err)
	}
	return p, nil
}

func readDeprecations(ctx context.Context, c *catalog.Catalog, pkg string) (*deprecations, error) {
	d := newDeprecations()
	b, err := read(ctx, c, catalog.Query{Schema: "olm.deprecations", Package: pkg})
	if err != nil {
		return nil, err
	}
	err = eachLine(b, func(line []byte) error {
		var x fbcDeprecation
		if err := json.Unmarshal(line, &x); err != nil {
			return fmt.Errorf("%w: deprecations of %s: %v", catalog.ErrCorrupt, pkg, err)
		}
		d.add(x)
		return nil
	})
	return d, err
}

// bundleHit is a bundle whose name matched a search.
type bundleHit struct{ Package, Name string }

func (h *Handler) serveCatalog(w http.ResponseWriter, r *http.Request) {
	name, ok := param(r, "name")
	if ok && catalog.ValidName(name) && h.listed(name) {
		switch _, err := h.open(r.Context(), name); {
		case errors.Is(err, storage.ErrNotExist):
			h.serveStatus(w, http.StatusOK, name, "Not published yet: below, its sync as it runs.")
			return
		case err != nil && r.Context().Err() == nil && !errors.Is(err, errTooLarge):
			h.log.Warn("ui: catalog unreadable", "catalog", name, "err", err)
			// An error code still, for monitoring; the page says what it knows.
			h.serveStatus(w, http.StatusServiceUnavailable, name, "Its stored content cannot be read now: below, its sync.")
			return
		}
	}
	c := h.catalogFor(w, r)
	if c == nil {
		return
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	var names []string
	seen := map[string]bool{}
	c.Objects(catalog.Query{Schema: "olm.package"}, func(o catalog.Object) bool {
		if !seen[o.Name] && (q == "" || strings.Contains(strings.ToLower(o.Name), q)) {
			seen[o.Name] = true
			names = append(names, o.Name)
		}
		return true
	})
	var hits []bundleHit
	hitCount := 0
	if q != "" {
		c.Objects(catalog.Query{Schema: "olm.bundle"}, func(o catalog.Object) bool {
			if strings.Contains(strings.ToLower(o.Name), q) {
				if hitCount++; len(hits) < 100 {
					hits = append(hits, bundleHit{o.Package, o.Name})
				}
				if !seen[o.Package] {
					seen[o.Package] = true
					names = append(names, o.Package)
				}
			}
			return true
		})
	}
	slices.Sort(names)
	pages := max((len(names)+pageSize-1)/pageSize, 1)
	page = min(page, pages)
	shown := names[min((page-1)*pageSize, len(names)):min(page*pageSize, len(names))]
	rows := make([]packageRow, len(shown))
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, pkg := range shown {
		g.Go(func() (err error) {
			rows[i], err = h.row(gctx, c, pkg)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		h.storeError(w, r, err)
		return
	}
	h.render(w, "catalog.html", map[string]any{
		"Catalog": c.Name, "Digest": c.Meta.Digest, "Query": r.URL.Query().Get("q"), "Rows": rows,
		"Total": len(names), "Page": page, "Pages": pages, "Hits": hits, "HitCount": hitCount,
		"Prev": pageLink(c.Name, r.URL.Query().Get("q"), page-1, pages), "Next": pageLink(c.Name, r.URL.Query().Get("q"), page+1, pages),
	})
}

func pageLink(cat, q string, page, pages int) string {
	if page < 1 || page > pages {
		return ""
	}
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	v.Set("page", strconv.Itoa(page))
	return catalogURL(cat) + "?" + v.Encode()
}

// packageData is what the package page, and its Mermaid, are built from.
type packageData struct {
	pkg     fbcPackage
	dep     *deprecations
	graphs  []channelGraph
	bundles []bundleRow
}

type bundleRow struct {
	Name, Version, Image, Deprecated string
}

func (h *Handler) loadPackage(ctx context.Context, c *catalog.Catalog, pkg string) (*packageData, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	d := &packageData{}
	var chans, bundles []byte
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { d.pkg, err = readPackage(gctx, c, pkg); return })
	g.Go(func() (err error) { d.dep, err = readDeprecations(gctx, c, pkg); return })
	g.Go(func() (err error) {
		chans, err = read(gctx, c, catalog.Query{Schema: "olm.channel", Package: pkg})
		return
	})
	g.Go(func() (err error) {
		bundles, err = read(gctx, c, catalog.Query{Schema: "olm.bundle", Package: pkg})
		return
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if d.pkg.Name == "" && len(chans) == 0 && len(bundles) == 0 {
		return nil, fmt.Errorf("package %q: %w", shorten(pkg, 100), storage.ErrNotExist)
	}
	infos := map[string]bundleInfo{}
	err := eachLine(bundles, func(line []byte) error {
		var b struct{ Name, Image string }
		if err := json.Unmarshal(line, &b); err != nil {
			return fmt.Errorf("%w: bundle of %s: %v", catalog.ErrCorrupt, pkg, err)
		}
		v := bundleVersion(line)
		infos[b.Name] = bundleInfo{version: v}
		d.bundles = append(d.bundles, bundleRow{Name: b.Name, Version: v, Image: b.Image, Deprecated: d.dep.bundles[b.Name]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(d.bundles, func(a, b bundleRow) int {
		if newer(a.Version, b.Version) {
			return -1
		}
		if newer(b.Version, a.Version) {
			return 1
		}
		return 0
	})
	href := func(b string) string { return bundleURL(c.Name, pkg, b) }
	err = eachLine(chans, func(line []byte) error {
		var ch fbcChannel
		if err := json.Unmarshal(line, &ch); err != nil {
			return fmt.Errorf("%w: channel of %s: %v", catalog.ErrCorrupt, pkg, err)
		}
		d.graphs = append(d.graphs, buildGraph(ch, infos, d.dep, href))
		return nil
	})
	slices.SortStableFunc(d.graphs, func(a, b channelGraph) int { return strings.Compare(a.Channel, b.Channel) })
	return d, err
}

// graphView is one channel on the package page; Data is the graph as
// JSON for the script that draws it (html/template escapes it into an
// attribute).
type graphView struct {
	channelGraph
	Default bool
	Data    string
}

// packageFor reads the package the request names, answering the request
// itself when it cannot: ok is false then.
func (h *Handler) packageFor(w http.ResponseWriter, r *http.Request) (c *catalog.Catalog, pkg string, d *packageData, ok bool) {
	if c = h.catalogFor(w, r); c == nil {
		return nil, "", d, false
	}
	pkg, _ = param(r, "pkg")
	d, err := h.loadPackage(r.Context(), c, pkg)
	if err != nil {
		h.storeError(w, r, err)
		return nil, "", d, false
	}
	return c, pkg, d, true
}

func (h *Handler) servePackage(w http.ResponseWriter, r *http.Request) {
	c, pkg, d, ok := h.packageFor(w, r)
	if !ok {
		return
	}
	views := make([]graphView, len(d.graphs))
	for i, g := range d.graphs {
		b, _ := json.Marshal(g)
		views[i] = graphView{channelGraph: g, Default: g.Channel == d.pkg.DefaultChannel, Data: string(b)}
	}
	h.render(w, "package.html", map[string]any{
		"Catalog": c.Name, "Package": pkg, "Pkg": d.pkg, "Deprecated": d.dep.pkg, "Graphs": views, "Bundles": d.bundles,
		"Description": markdown(d.pkg.Description),
		"Icon":        d.pkg.Icon != nil && iconType(d.pkg.Icon.MediaType) != "",
		"Mermaid":     packageURL(c.Name, pkg) + "graph.mmd",
	})
}

// serveMermaid answers the package's graphs in opm alpha render-graph's
// Mermaid, for comparison and for tools that draw Mermaid.
func (h *Handler) serveMermaid(w http.ResponseWriter, r *http.Request) {
	_, pkg, d, ok := h.packageFor(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_ = writeMermaid(w, pkg, d.graphs) // fails only when the client left
}
