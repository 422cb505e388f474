package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// drawnChannel is what a package page drew for one channel, and the graph
// data it drew it from: nodes by name, edges as "from kind to".
type drawnChannel struct {
	Channel    string   `json:"channel"`
	DataNodes  []string `json:"dataNodes"`
	DataEdges  []string `json:"dataEdges"`
	DrawnNodes []string `json:"drawnNodes"`
	DrawnEdges []string `json:"drawnEdges"`
}

// drawnGraphs reads every channel's SVG of the open page, by the names
// its nodes' data-id stand for.
const drawnGraphsJS = `Array.from(document.querySelectorAll(".graph")).map(function (g) {
	var d = JSON.parse(g.dataset.graph), names = {};
	(d.nodes || []).forEach(function (n) { names[n.id] = n.name; });
	var edge = function (from, kind, to) { return names[from] + " " + kind + " " + names[to]; };
	return {
		channel: d.channel,
		dataNodes: (d.nodes || []).map(function (n) { return n.name; }).sort(),
		dataEdges: (d.edges || []).map(function (e) { return edge(e.from, e.kind, e.to); }).sort(),
		drawnNodes: Array.from(g.querySelectorAll("svg g.node")).map(function (n) { return names[n.dataset.id]; }).sort(),
		drawnEdges: Array.from(g.querySelectorAll("svg path.edge")).map(function (e) { return edge(e.dataset.from, e.dataset.kind, e.dataset.to); }).sort()
	};
})`

var (
	reMermaidLabel    = regexp.MustCompile(`\["((?:[^"\\]|\\.)*)"\]`)
	reMermaidSubgraph = regexp.MustCompile(`^\s*subgraph .*\["((?:[^"\\]|\\.)*)"\]$`)
	reMermaidEdge     = regexp.MustCompile(`"\]-- (replace|skip|"skipRange\(.*?\)") --> `)
)

// opmChannels reads opm alpha render-graph's Mermaid as drawnChannels:
// nodes (entries and the names edges point at) and edges, by channel.
func opmChannels(t *testing.T, mermaid string) map[string]*drawnChannel {
	t.Helper()
	out := map[string]*drawnChannel{}
	var cur *drawnChannel
	nodes := map[string]bool{}
	flush := func() {
		if cur != nil {
			for n := range nodes {
				cur.DataNodes = append(cur.DataNodes, n)
			}
			slices.Sort(cur.DataNodes)
			slices.Sort(cur.DataEdges)
		}
		nodes = map[string]bool{}
	}
	kinds := map[string]string{"replace": edgeReplaces, "skip": edgeSkips}
	for _, line := range strings.Split(mermaid, "\n") {
		// Channels are the subgraphs inside the package's.
		if m := reMermaidSubgraph.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "    subgraph ") {
			flush()
			name, _ := strconv.Unquote(`"` + m[1] + `"`)
			cur = &drawnChannel{Channel: name}
			out[name] = cur
			continue
		}
		if cur == nil {
			continue
		}
		labels := reMermaidLabel.FindAllStringSubmatch(line, -1)
		names := make([]string, len(labels))
		for i, l := range labels {
			names[i], _ = strconv.Unquote(`"` + l[1] + `"`)
			nodes[names[i]] = true
		}
		if m := reMermaidEdge.FindStringSubmatch(line); m != nil && len(names) == 2 {
			kind, ok := kinds[m[1]]
			if !ok {
				kind = edgeSkipRange
			}
			cur.DataEdges = append(cur.DataEdges, names[0]+" "+kind+" "+names[1])
		}
	}
	flush()
	return out
}

// graphTally counts what the every-page tests saw.
type graphTally struct{ pages, channels, nodes, edges, opmEdges, scriptErrors int }

// checkPackagePages opens each package's page of catalog cat in Chromium
// and holds what it drew to the page's graph data and, when opmDir is
// set, to `opm alpha render-graph` of that catalog folder.
func checkPackagePages(t *testing.T, b *browser, srv *server, cat string, pkgs []string, opm, opmDir string) graphTally {
	var n graphTally
	mermaid := opmGraphs(t, opm, opmDir, pkgs)
	for _, pkg := range pkgs {
		b.t = t
		page := packageURL(cat, pkg)
		n.pages++
		n.scriptErrors += b.load(srv.URL + page)
		if evalAs[string](b, `document.body.dataset.ready || ""`) != "true" {
			t.Errorf("%s: data-ready not set", page)
		}
		var drawn []drawnChannel
		if err := json.Unmarshal([]byte(evalAs[string](b, `JSON.stringify(`+drawnGraphsJS+`)`)), &drawn); err != nil {
			t.Fatal(err)
		}
		for _, c := range drawn {
			n.channels++
			n.nodes += len(c.DrawnNodes)
			n.edges += len(c.DrawnEdges)
			if !slices.Equal(c.DrawnNodes, c.DataNodes) || !slices.Equal(c.DrawnEdges, c.DataEdges) {
				t.Errorf("%s channel %q: drawn %d nodes %d edges, data %d nodes %d edges:\n%s", page, c.Channel,
					len(c.DrawnNodes), len(c.DrawnEdges), len(c.DataNodes), len(c.DataEdges), lineDiff(c.DataEdges, c.DrawnEdges))
			}
		}
		if opm == "" {
			continue
		}
		// opm validates what it draws: nothing in it is stranded.
		if n := evalAs[int](b, `document.querySelectorAll(".graph svg g.node.stranded").length`); n > 0 {
			t.Errorf("%s: %d entries drawn stranded in a catalog opm accepts", page, n)
		}
		out, ok := mermaid[pkg]
		if !ok {
			continue // opm failed: reported
		}
		want := opmChannels(t, out)
		if len(want) != len(drawn) {
			t.Errorf("%s: %d channels drawn, opm draws %d", page, len(drawn), len(want))
		}
		for _, c := range drawn {
			w := want[c.Channel]
			if w == nil {
				t.Errorf("%s: channel %q drawn, not in opm's graph", page, c.Channel)
				continue
			}
			n.opmEdges += len(w.DataEdges)
			if !slices.Equal(c.DrawnNodes, w.DataNodes) || !slices.Equal(c.DrawnEdges, w.DataEdges) {
				t.Errorf("%s channel %q: drawn %d nodes %d edges, opm %d nodes %d edges:\n%s", page, c.Channel,
					len(c.DrawnNodes), len(c.DrawnEdges), len(w.DataNodes), len(w.DataEdges), lineDiff(w.DataEdges, c.DrawnEdges))
			}
		}
	}
	return n
}

// opmGraphs runs opm alpha render-graph for each package of opmDir, two
// at a time, into a map of their Mermaid by package.
func opmGraphs(t *testing.T, opm, opmDir string, pkgs []string) map[string]string {
	out := map[string]string{}
	if opm == "" {
		return out
	}
	tmp := t.TempDir() // opm leaves an opm-registry-* dir per run in its temp dir
	var mu sync.Mutex
	g := errgroup.Group{}
	g.SetLimit(2)
	for _, pkg := range pkgs {
		g.Go(func() error {
			b, err := opmRenderGraph(tmp, opm, opmDir, pkg)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("opm alpha render-graph -p %s: %v", pkg, err)
				return nil
			}
			out[pkg] = string(b)
			return nil
		})
	}
	_ = g.Wait() // the workers report their errors
	return out
}

func packageNames(t *testing.T, store storage.Store, cat string) []string {
	t.Helper()
	c, err := catalog.Open(context.Background(), store, cat)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	c.Objects(catalog.Query{Schema: "olm.package"}, func(o catalog.Object) bool {
		if !slices.Contains(pkgs, o.Name) {
			pkgs = append(pkgs, o.Name)
		}
		return true
	})
	return pkgs
}

func peerOPM(t *testing.T) string {
	shared := sharedDir(t)
	if shared == "" {
		return ""
	}
	opm := filepath.Join(shared, "tools/peers/opm")
	if _, err := os.Stat(opm); err != nil {
		t.Logf("opm not found at %s: drawn graphs are held to their data only", opm)
		return ""
	}
	return opm
}

// Every package page of the edge-case catalog, of a catalog with stranded
// entries and several heads (which validation refuses, so written to the
// store directly) and of the shared community catalog draws, without a
// script error, every node and edge of its channels: those of the page's
// data and those `opm alpha render-graph` draws.
func TestEveryPackagePageDraws(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium over every package page")
	}
	b := newBrowser(t)
	opm := peerOPM(t)
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	publishObjects(t, store, "unvalidated", unvalidatedObjects())
	set := engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")}, {Name: "unvalidated", Image: catalogspec.ParseImage("example.test/unvalidated:v1")}}
	community := ""
	if shared := sharedDir(t); shared != "" {
		community = filepath.Join(shared, "testdata/fbc/community-v4.21/configs")
		set = append(set, catalogspec.Catalog{Name: "community", Image: catalogspec.ParseImage("example.test/community:v4.21")})
	}
	srv := startServer(t, store, set, nil)
	report := func(name string, n graphTally) {
		t.Logf("%s: %d package pages, %d channels, %d nodes and %d edges drawn (%d edges by opm), %d script errors",
			name, n.pages, n.channels, n.nodes, n.edges, n.opmEdges, n.scriptErrors)
	}
	t.Run("edge-cases", func(t *testing.T) {
		report("edge-cases", checkPackagePages(t, b, srv, "edge", packageNames(t, store, "edge"), opm, edgeCatalog(t)))
	})
	t.Run("unvalidated", func(t *testing.T) {
		report("unvalidated", checkPackagePages(t, b, srv, "unvalidated", packageNames(t, store, "unvalidated"), "", ""))
		b.open(srv.URL + packageURL("unvalidated", "stranded"))
		got := evalAs[[]string](b, `Array.from(document.querySelectorAll(".graph svg g.node.stranded text.label")).map(function (t) { return t.textContent; }).sort()`)
		if !slices.Equal(got, []string{"stranded.v1.0.5"}) {
			t.Errorf("stranded drawn: %q", got)
		}
	})
	t.Run("community", func(t *testing.T) {
		if community == "" {
			t.Skip("needs ../shared/testdata/fbc/community-v4.21 beside the repository (or CATALOGSYNC_SHARED)")
		}
		// Synced here, not above: test/run.sh runs this subtest without
		// the race detector, and the raced run that skips it need not
		// pay for the catalog's sync.
		syncDir(t, store, "community", community)
		pkgs := packageNames(t, store, "community")
		if len(pkgs) < 30 {
			t.Fatalf("%d packages in %s", len(pkgs), community)
		}
		report("community", checkPackagePages(t, b, srv, "community", pkgs, opm, community))
	})
}

// unvalidatedObjects is a catalog validation refuses, as an older
// publish or a bug could leave one in the store: a stranded entry,
// several heads, a channel linked by skipRange alone, an empty one.
func unvalidatedObjects() [][4]string {
	line := func(v map[string]any) string {
		b, _ := json.Marshal(v)
		return string(b) + "\n"
	}
	var objs [][4]string
	bundle := func(pkg, name, version string) {
		objs = append(objs, [4]string{"olm.bundle", pkg, name, line(map[string]any{"schema": "olm.bundle", "package": pkg, "name": name,
			"image":      "example.test/" + pkg + ":" + version,
			"properties": []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": version}}}})})
	}
	pkg := func(name, def string, channels map[string][]map[string]any) {
		objs = append(objs, [4]string{"olm.package", "", name, line(map[string]any{"schema": "olm.package", "name": name, "defaultChannel": def})})
		for ch, entries := range channels {
			objs = append(objs, [4]string{"olm.channel", name, ch, line(map[string]any{"schema": "olm.channel", "package": name, "name": ch, "entries": entries})})
		}
	}
	e := func(name string, kv ...any) map[string]any {
		m := map[string]any{"name": name}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	pkg("stranded", "stable", map[string][]map[string]any{"stable": {
		e("stranded.v1.0.0"), e("stranded.v1.1.0", "replaces", "stranded.v1.0.0"), e("stranded.v1.0.5"),
		e("stranded.v1.2.0", "replaces", "stranded.v1.1.0", "skips", []any{"stranded.v0.9.0", "stranded.v1.0.6"}),
		e("stranded.v1.0.6", "replaces", "stranded.v1.0.5")}})
	pkg("skiprange-heads", "stable", map[string][]map[string]any{"stable": {
		e("skiprange-heads.v1.0.0"), e("skiprange-heads.v1.1.0", "skipRange", "<1.1.0"), e("skiprange-heads.v1.2.0", "skipRange", ">=1.0.0 <1.2.0")},
		"empty": {}})
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.0.5", "1.0.6"} {
		bundle("stranded", "stranded.v"+v, v)
	}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		bundle("skiprange-heads", "skiprange-heads.v"+v, v)
	}
	return objs
}
