package ui

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// copyFBC copies the packages of the test catalog into a new folder,
// passing each catalog.yaml through edit.
func copyFBC(t *testing.T, pkgs []string, edit func(pkg, yaml string) string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs")
	dst := t.TempDir()
	for _, p := range pkgs {
		b, err := os.ReadFile(filepath.Join(src, p, "catalog.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dst, p), 0o755)
		if err := os.WriteFile(filepath.Join(dst, p, "catalog.yaml"), []byte(edit(p, string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// waitOp waits for the engine's operation id to end.
func waitOp(t *testing.T, e *engine.Engine, id string) engine.Operation {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if op, ok := e.Operation(id); ok && (op.State == engine.OpSucceeded || op.State == engine.OpFailed) {
			return op
		}
	}
	t.Fatalf("operation %s did not end", id)
	return engine.Operation{}
}

func syncNow(t *testing.T, e *engine.Engine, name string) {
	t.Helper()
	op, err := e.Trigger(context.Background(), name, "test")
	if err != nil {
		t.Fatal(err)
	}
	if done := waitOp(t, e, op.ID); done.State != engine.OpSucceeded {
		t.Fatalf("sync of %s: %+v", name, done.Error)
	}
}

// TestBrowserPages drives headless Chromium over every page of a catalog
// synced from a real registry and published twice: each loads without a
// console error and shows what it must; the catalogs page follows a
// throttled sync live.
func TestBrowserPages(t *testing.T) {
	b := newBrowser(t)
	reg := servers.StartRegistry(t)
	proxy := servers.NewProxy(t, reg.URL)
	ctx := context.Background()
	rc := imagebuild.NewRegClient(reg.Host)
	ref := reg.Host + "/c3/catalog:v1"
	all := []string{"apicurio-registry-3", "aws-neuron-operator", "ecr-secret-operator"}
	same := func(_, y string) string { return y }
	if _, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(copyFBC(t, all[:2], same), "/configs")); err != nil {
		t.Fatal(err)
	}
	src, err := source.New(source.WithHosts(source.Host{Name: reg.Host, PlainHTTP: true}, source.Host{Name: proxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	store := newStore(t)
	pl := pipeline.New(src, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	set := engine.StaticCatalogs{{Name: "c3", Image: catalogspec.ParseImage(ref)}, {Name: "slow", Image: catalogspec.ParseImage(proxy.Host + "/c3/catalog:v1")}}
	srv := startServer(t, store, set, pl)
	syncNow(t, srv.engine, "c3")
	// The second publish adds a package and changes one bundle of another.
	v2 := copyFBC(t, all, func(p, y string) string {
		return strings.Replace(y, "Aws Neuron Operator description. TODO.", "Aws Neuron Operator, described.", 1)
	})
	if _, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(v2, "/configs")); err != nil {
		t.Fatal(err)
	}
	syncNow(t, srv.engine, "c3")

	t.Run("root", func(t *testing.T) {
		b.t = t
		b.open(srv.URL + "/")
		if n := evalAs[int](b, `document.querySelectorAll('main a[href="/ui/"]').length`); n != 1 {
			t.Errorf("/ links to /ui/ %d times", n)
		}
	})
	t.Run("catalogs", func(t *testing.T) {
		b.t = t
		b.open(srv.URL + "/ui/")
		row := `tr[data-catalog="c3"] `
		if got := b.text(row + ".packages"); got != "3" {
			t.Errorf("c3 packages %q", got)
		}
		if got := b.text(row + ".bundles"); got != "37" {
			t.Errorf("c3 bundles %q", got)
		}
		// The phase comes from the API, after the first poll.
		b.do(chromedp.WaitVisible(chromedp.CSS(`tr[data-catalog="c3"][data-phase]`)))
		if got := b.text(`tr[data-catalog="c3"] .phase`); got != "Published" {
			t.Errorf("c3 phase %q", got)
		}
		if got := b.text(`tr[data-catalog="slow"] .digest`); got != "not published" {
			t.Errorf("slow digest %q before its sync", got)
		}
		b.screenshot("catalogs")
		b.noErrors("catalogs")
	})
	t.Run("live progress", func(t *testing.T) { b.t = t; testLiveProgress(t, b, srv, proxy) })
	t.Run("catalog", func(t *testing.T) {
		b.t = t
		b.open(srv.URL + "/ui/catalogs/c3/")
		if got := b.text("#count .total"); got != "3" {
			t.Errorf("package count %q", got)
		}
		if n := evalAs[int](b, `document.querySelectorAll("#packages tr.package").length`); n != 3 {
			t.Errorf("%d package rows", n)
		}
		if n := evalAs[int](b, `Array.from(document.querySelectorAll("#packages img.icon")).filter(function (i) { return i.complete && i.naturalWidth > 0; }).length`); n == 0 {
			t.Error("no package icon displayed")
		}
		b.screenshot("catalog")
		b.open(srv.URL + "/ui/catalogs/c3/?q=neuron-operator.v1.1")
		if got := b.text("#count .total"); got != "1" {
			t.Errorf("search: %q packages", got)
		}
		if n := evalAs[int](b, `document.querySelectorAll(".hits li").length`); n != 5 {
			t.Errorf("search: %d bundles, want the 5 of aws-neuron-operator v1.1.x", n)
		}
	})
	t.Run("package", func(t *testing.T) { b.t = t; testPackagePage(t, b, srv) })
	t.Run("changes", func(t *testing.T) {
		b.t = t
		b.open(srv.URL + "/ui/")
		b.do(chromedp.Click(chromedp.CSS(`tr[data-catalog="c3"] a.changes`)), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		b.noErrors("changes")
		added := evalAs[[]string](b, `Array.from(document.querySelectorAll("#changes-package li.added")).map(function (e) { return e.textContent; })`)
		changed := evalAs[[]string](b, `Array.from(document.querySelectorAll("#changes-package li.changed")).map(function (e) { return e.textContent; })`)
		if strings.Join(added, ",") != "+ ecr-secret-operator" || strings.Join(changed, ",") != "~ aws-neuron-operator" {
			t.Errorf("packages added %q, changed %q", added, changed)
		}
		if n := evalAs[int](b, `document.querySelectorAll("#changes-bundle li.added").length`); n != 4 {
			t.Errorf("%d bundles added, want ecr-secret-operator's 4", n)
		}
		if got := evalAs[[]string](b, `Array.from(document.querySelectorAll("#changes-bundle li.changed")).map(function (e) { return e.textContent; })`); len(got) != 1 {
			t.Errorf("bundles changed %q, want the one whose description changed", got)
		}
		b.screenshot("changes")
	})
}

// testLiveProgress throttles the registry's blobs and watches the
// catalogs page, without reloading it, show the layer's bytes moving and
// then the published digest.
func testLiveProgress(t *testing.T, b *browser, srv *server, proxy *servers.Proxy) {
	b.open(srv.URL + "/ui/")
	proxy.Inject(servers.Throttle(2000), 0, servers.BlobGET)
	defer proxy.Clear()
	op, err := srv.engine.Trigger(context.Background(), "slow", "test")
	if err != nil {
		t.Fatal(err)
	}
	row := `tr[data-catalog="slow"]`
	seen := map[string]bool{}
	shot := false
	for deadline := time.Now().Add(2 * time.Minute); len(seen) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("saw progress %v only", seen)
		}
		if evalAs[string](b, `document.querySelector('`+row+`').dataset.phase || ""`) == "Pulling" {
			if p := b.text(row + " .progress-text"); strings.HasPrefix(p, "layer 1/1: ") {
				seen[p] = true
				if !shot {
					b.screenshot("catalogs-syncing")
					shot = true
				}
			}
		}
		b.do(chromedp.Sleep(250 * time.Millisecond))
	}
	proxy.Clear()
	if done := waitOp(t, srv.engine, op.ID); done.State != engine.OpSucceeded {
		t.Fatalf("slow sync: %+v", done.Error)
	}
	// Still the same page: the digest appears once the API reports it.
	for deadline := time.Now().Add(time.Minute); strings.HasPrefix(b.text(row+" .digest"), "not published"); {
		if time.Now().After(deadline) {
			t.Fatal("published digest never shown")
		}
		b.do(chromedp.Sleep(100 * time.Millisecond))
	}
	b.noErrors("catalogs page during a sync")
}

// testPackagePage checks every drawn graph against its data and against
// the Mermaid served for it (which TestGraphsMatchOPM holds to opm), then
// opens a bundle by clicking its node.
func testPackagePage(t *testing.T, b *browser, srv *server) {
	const pkg = "apicurio-registry-3"
	b.open(srv.URL + packageURL("c3", pkg))
	counts := b.graphCounts()
	_, mmd := get(t, srv.URL+packageURL("c3", pkg)+"graph.mmd")
	mg := parseMermaid(t, mmd)
	if len(counts) != 3 || len(mg) != 3 {
		t.Fatalf("%d channels drawn, %d in the Mermaid", len(counts), len(mg))
	}
	for _, c := range counts {
		name, rest, _ := strings.Cut(c, " drawn ")
		drawn, data, _ := strings.Cut(rest, " data ")
		if drawn != data {
			t.Errorf("channel %s: drawn %s, data %s", name, drawn, data)
		}
		nodes, edges := map[string]bool{}, map[string]int{}
		for _, l := range mg[`"`+name+`"`] {
			if e, ok := strings.CutPrefix(l, "edge "); ok {
				from, rest, _ := strings.Cut(e, " -- ")
				label, to, _ := strings.Cut(rest, " --> ")
				nodes[from], nodes[to] = true, true
				edges[strings.SplitN(strings.Trim(label, `"`), "(", 2)[0]]++
			} else if n, ok := strings.CutPrefix(l, "node "); ok {
				nodes[strings.TrimSuffix(n, ":::deprecated")] = true
			}
		}
		want := map[string]int{"replace": 0, "skip": 0, "skipRange": 0}
		for k, n := range edges {
			want[k] = n
		}
		if !strings.HasPrefix(drawn, itoa(len(nodes))+" nodes") {
			t.Errorf("channel %s: drawn %s, Mermaid has %d nodes", name, drawn, len(nodes))
		}
		for k, n := range want {
			key := map[string]string{"replace": "replaces", "skip": "skips", "skipRange": "skipRange"}[k]
			if n > 0 && !strings.Contains(drawn, `"`+key+`":`+itoa(n)) || n == 0 && strings.Contains(drawn, `"`+key+`"`) {
				t.Errorf("channel %s: drawn %s, Mermaid has %d %s edges", name, drawn, n, k)
			}
		}
	}
	if n := evalAs[int](b, `document.querySelectorAll(".graph svg g.node.head").length`); n != 3 {
		t.Errorf("%d heads marked over 3 channels", n)
	}
	b.screenshot("package")
	// Clicking a node opens its bundle.
	href := evalAs[string](b, `document.querySelector(".graph svg a").getAttribute("href")`)
	name := evalAs[string](b, `document.querySelector(".graph svg a text.label").textContent`)
	b.do(chromedp.Click(chromedp.CSS(".graph svg a g.node")), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	if got := evalAs[string](b, `location.pathname`); got != href {
		t.Fatalf("clicked a node: at %s, want %s", got, href)
	}
	b.noErrors("bundle " + href)
	if got := b.text("h1"); got != name {
		t.Errorf("bundle page h1 %q, node %q", got, name)
	}
	if got := b.text("#image"); !strings.Contains(got, "apicurio") {
		t.Errorf("bundle image %q", got)
	}
	if n := evalAs[int](b, `document.querySelectorAll("#provided tbody tr").length`); n < 1 {
		t.Error("no provided API listed")
	}
	if got := b.text("#csv tr:first-child td"); !strings.Contains(got, "Apicurio") {
		t.Errorf("CSV display name %q", got)
	}
	b.screenshot("bundle")
}

func itoa(n int) string { return strconv.Itoa(n) }
