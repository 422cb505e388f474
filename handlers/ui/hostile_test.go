package ui

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// Markup a hostile catalog carries in every text it controls: each would
// set window.__pwned if the browser ran it.
const (
	xssScript = `<script>window.__pwned="script"</script>`
	xssImg    = `<img src=x onerror="window.__pwned='img'">`
	xssSVG    = `<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned='svg'"><script>window.__pwned="svg-script"</script><circle r="5"/></svg>`
)

// hostileObjects is a catalog written straight to the store, as a
// compromised image or a bug upstream could leave it: markup in every
// name and description, javascript: links, an SVG icon with a script, an
// icon declared as HTML, and a package named with a megabyte.
func hostileObjects() [][4]string {
	line := func(v map[string]any) string {
		b, _ := json.Marshal(v) // sorted keys, compact: as stored
		return string(b) + "\n"
	}
	prop := func(typ string, v any) map[string]any { return map[string]any{"type": typ, "value": v} }
	desc := "evil " + xssScript + xssImg + ` [click](javascript:window.__pwned='md')`
	bundle := func(name, version string) map[string]any {
		return map[string]any{"schema": "olm.bundle", "package": "evil", "name": name, "image": "javascript:window.__pwned='image'" + xssScript,
			"relatedImages": []any{map[string]any{"name": xssScript, "image": xssImg}},
			"properties": []any{
				prop("olm.package", map[string]any{"packageName": "evil", "version": version}),
				prop("olm.gvk", map[string]any{"group": xssScript, "version": "v1", "kind": xssImg}),
				prop("olm.csv.metadata", map[string]any{"displayName": xssScript, "description": desc,
					"links":       []any{map[string]any{"name": "docs", "url": "javascript:window.__pwned='link'"}, map[string]any{"name": xssImg, "url": "https://example.test/ok"}},
					"maintainers": []any{map[string]any{"name": xssScript, "email": xssImg}}, "keywords": []any{xssScript}}),
				prop("x.custom"+xssScript, map[string]any{"html": xssScript}),
			}}
	}
	big := strings.Repeat("a", 1<<20)
	return [][4]string{
		{"olm.package", "", "evil", line(map[string]any{"schema": "olm.package", "name": "evil", "defaultChannel": "stable" + xssScript,
			"description": desc, "icon": map[string]any{"base64data": base64.StdEncoding.EncodeToString([]byte(xssSVG)), "mediatype": "image/svg+xml"}})},
		{"olm.channel", "evil", "stable" + xssScript, line(map[string]any{"schema": "olm.channel", "package": "evil", "name": "stable" + xssScript,
			"entries": []any{map[string]any{"name": "evil.v1.0.0"}, map[string]any{"name": "evil.v1.1.0", "replaces": "evil.v1.0.0", "skips": []any{xssScript}, "skipRange": "<1.1.0"}}})},
		{"olm.bundle", "evil", "evil.v1.0.0", line(bundle("evil.v1.0.0", "1.0.0"))},
		{"olm.bundle", "evil", "evil.v1.1.0", line(bundle("evil.v1.1.0", "1.1.0"))},
		{"olm.deprecations", "evil", "", line(map[string]any{"schema": "olm.deprecations", "package": "evil",
			"entries": []any{map[string]any{"reference": map[string]any{"schema": "olm.bundle", "name": "evil.v1.0.0"}, "message": xssScript}}})},
		{"olm.package", "", "htmlicon", line(map[string]any{"schema": "olm.package", "name": "htmlicon",
			"icon": map[string]any{"base64data": base64.StdEncoding.EncodeToString([]byte(xssScript)), "mediatype": "text/html"}})},
		{"olm.package", "", big, line(map[string]any{"schema": "olm.package", "name": big, "description": strings.Repeat(xssScript, 1<<15)})},
	}
}

func publishHostile(t *testing.T, s storage.Store, name string) {
	t.Helper()
	publishObjects(t, s, name, hostileObjects())
}

// publishObjects writes objs ({schema, package, name, line}) to the
// store as catalog name and publishes it, without the pipeline's
// validation.
func publishObjects(t *testing.T, s storage.Store, name string, objs [][4]string) {
	t.Helper()
	ctx := context.Background()
	sum := sha256.Sum256([]byte(name))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	w, err := catalog.NewWriter(ctx, s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, o := range objs {
		if err := w.Add(o[0], o[1], o[2], []byte(o[3])); err != nil {
			t.Fatal(err)
		}
	}
	ref := "example.test/" + name + ":v1"
	if _, err := w.Commit(ctx, catalog.Meta{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(ctx, s, name, catalog.Pointer{Digest: digest, Ref: ref,
		ResolvedRef: "example.test/" + name + "@" + digest, ResolvedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileCatalog renders a hostile catalog's pages in Chromium: no
// script of the catalog runs, no handler attribute or javascript: link
// reaches the DOM, and the icons are served only as images that run
// nothing.
func TestHostileCatalog(t *testing.T) {
	b := newBrowser(t)
	store := newStore(t)
	publishHostile(t, store, "hostile")
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "hostile", Image: catalogspec.ParseImage("example.test/hostile:v1" + xssScript)}}, nil)
	pages := []string{
		"/ui/",
		catalogURL("hostile"),
		catalogURL("hostile") + "?q=" + "evil",
		packageURL("hostile", "evil"),
		bundleURL("hostile", "evil", "evil.v1.0.0"),
		bundleURL("hostile", "evil", "evil.v1.1.0"),
		catalogURL("hostile") + "changes",
	}
	for _, p := range pages {
		b.t = t
		b.open(srv.URL + p)
		checkInert(t, b, p)
		// Clicking every link the page offers runs nothing either.
		links := evalAs[[]string](b, `Array.from(document.querySelectorAll("a[href]")).map(function (a) { return a.getAttribute("href"); })`)
		for _, l := range links {
			if !strings.HasPrefix(l, "/") && !strings.HasPrefix(l, "https://") && !strings.HasPrefix(l, "#") {
				t.Errorf("%s: link %.100q is neither ours nor a web link", p, l)
			}
		}
	}
	// The drawn graph has the entries and the skipped markup name.
	b.open(srv.URL + packageURL("hostile", "evil"))
	if n := evalAs[int](b, `document.querySelectorAll(".graph svg g.node").length`); n != 3 {
		t.Errorf("%d nodes drawn, want 2 entries and the name one skips", n)
	}
	// The megabyte name is listed, shortened.
	b.open(srv.URL + catalogURL("hostile"))
	if n := evalAs[int](b, `Math.max.apply(null, Array.from(document.querySelectorAll("#packages a.name")).map(function (a) { return a.textContent.length; }))`); n > 300 {
		t.Errorf("a package name shown with %d characters", n)
	}
	b.screenshot("hostile")

	// The SVG icon: an image type, under a policy that runs nothing even
	// when opened on its own.
	resp, body := get(t, srv.URL+packageURL("hostile", "evil")+"icon")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || body != xssSVG ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("svg icon: %d %v", resp.StatusCode, resp.Header)
	}
	b.do(chromedp.Navigate(srv.URL + packageURL("hostile", "evil") + "icon"))
	b.do(chromedp.Sleep(300 * time.Millisecond))
	if v := evalAs[string](b, `String(window.__pwned)`); v != "undefined" {
		t.Errorf("opening the SVG icon ran its script: %s", v)
	}
	b.mu.Lock()
	b.errs = nil // the blocked script is reported; that is the point
	b.mu.Unlock()
	// An icon declared as HTML is not served at all.
	if resp, _ := get(t, srv.URL+packageURL("hostile", "htmlicon")+"icon"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("text/html icon: %d", resp.StatusCode)
	}
}

// checkInert fails the test if anything of the catalog ran or became
// markup: a script set window.__pwned, a script element other than ours,
// an on* attribute, a javascript: URL.
func checkInert(t *testing.T, b *browser, page string) {
	t.Helper()
	if v := evalAs[string](b, `String(window.__pwned)`); v != "undefined" {
		t.Errorf("%s: catalog script ran: %s", page, v)
	}
	scripts := evalAs[[]string](b, `Array.from(document.scripts).map(function (s) { return s.getAttribute("src") || "inline"; })`)
	if strings.Join(scripts, ",") != "/ui/assets/dagre.min.js,/ui/assets/app.js" {
		t.Errorf("%s: scripts %q", page, scripts)
	}
	if n := evalAs[int](b, `Array.from(document.querySelectorAll("*")).filter(function (e) { return Array.from(e.attributes).some(function (a) { return /^on/i.test(a.name) || /^\s*javascript:/i.test(a.value); }); }).length`); n != 0 {
		t.Errorf("%s: %d elements with a handler attribute or javascript: URL", page, n)
	}
	if n := evalAs[int](b, `document.querySelectorAll("main img:not(.icon), main svg:not(.graph-svg)").length`); n != 0 {
		t.Errorf("%s: %d images or SVGs from catalog markup", page, n)
	}
}
