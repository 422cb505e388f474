package ui

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/test/servers"
)

// mermaidGraph is what a Mermaid upgrade graph says, per channel: its
// entries (with ":::deprecated" kept) and its edges as
// "from -- label --> to", each counted.
type mermaidGraph map[string][]string

var (
	reSubgraph = regexp.MustCompile(`^\s*subgraph \S+\[("(?:[^"\\]|\\.)*")\]$`)
	reNode     = `\S+?\[("(?:[^"\\]|\\.)*")\]`
	reEdge     = regexp.MustCompile(`^\s*` + reNode + `-- (.+?) --> ` + reNode + `$`)
	reEntry    = regexp.MustCompile(`^\s*` + reNode + `(:::deprecated)?$`)
)

func parseMermaid(t *testing.T, text string) mermaidGraph {
	t.Helper()
	g := mermaidGraph{}
	channel := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reSubgraph.FindStringSubmatch(line); m != nil {
			channel = m[1]
			continue
		}
		if m := reEdge.FindStringSubmatch(line); m != nil {
			g[channel] = append(g[channel], "edge "+m[1]+" -- "+m[2]+" --> "+m[3])
			continue
		}
		if m := reEntry.FindStringSubmatch(line); m != nil && channel != "" {
			g[channel] = append(g[channel], "node "+m[1]+m[2])
		}
	}
	for c := range g {
		slices.Sort(g[c])
	}
	return g
}

// The drawn graph's edges are opm's: for every package of community-v4.21,
// the Mermaid built from the same graph the page draws has the entries
// and the replaces, skips and skipRange edges of `opm alpha
// render-graph`, channel by channel.
func TestGraphsMatchOPM(t *testing.T) {
	shared := sharedDir(t)
	if shared == "" {
		t.Skip("needs ../shared (the workplace's community-v4.21 catalog and opm) beside the repository")
	}
	opm := filepath.Join(shared, "tools/peers/opm")
	if _, err := os.Stat(opm); err != nil {
		t.Skipf("opm not found at %s: %v", opm, err)
	}
	if testing.Short() {
		t.Skip("runs opm once per package: long for -short")
	}
	dir := filepath.Join(shared, "testdata/fbc/community-v4.21/configs")
	store := newStore(t)
	syncDir(t, store, "community", dir)
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "community", Image: catalogspec.ParseImage("example.test/community:v4.21")}}, nil)
	c, err := catalog.Open(context.Background(), store, "community")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	c.Objects(catalog.Query{Schema: "olm.package"}, func(o catalog.Object) bool {
		pkgs = append(pkgs, o.Name)
		return true
	})
	if len(pkgs) < 30 {
		t.Fatalf("%d packages in %s", len(pkgs), dir)
	}
	var mu sync.Mutex
	edges := 0
	sem := make(chan struct{}, 2)
	tmp := t.TempDir() // opm leaves an opm-registry-* dir per run in its temp dir
	var wg sync.WaitGroup
	for _, pkg := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := opmRenderGraph(tmp, opm, dir, pkg)
			if err != nil {
				t.Errorf("opm render-graph %s: %v", pkg, err)
				return
			}
			resp, body := get(t, srv.URL+packageURL("community", pkg)+"graph.mmd")
			if resp.StatusCode != 200 {
				t.Errorf("%s: graph.mmd %d", pkg, resp.StatusCode)
				return
			}
			want, got := parseMermaid(t, string(out)), parseMermaid(t, body)
			if len(want) == 0 {
				t.Errorf("%s: opm drew no channel", pkg)
			}
			mu.Lock()
			defer mu.Unlock()
			for ch, w := range want {
				if g := got[ch]; !slices.Equal(g, w) {
					t.Errorf("%s channel %s:\n%s", pkg, ch, lineDiff(w, g))
				}
				for _, l := range w {
					if strings.HasPrefix(l, "edge ") {
						edges++
					}
				}
			}
			for ch := range got {
				if _, ok := want[ch]; !ok {
					t.Errorf("%s: channel %s drawn, not in opm's graph", pkg, ch)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d packages, %d edges agree with opm", len(pkgs), edges)
}

// renderedGraphs holds `opm alpha render-graph` of a package of a folder
// for the test binary's life: the drawn-page and graph.mmd tests both hold
// the community catalog's 33 packages to it, and each run reads the whole
// catalog (about 3 s of CPU).
var renderedGraphs sync.Map // folder + "\x00" + package -> *renderedGraph

type renderedGraph struct {
	once sync.Once
	out  []byte
	err  error
}

// opmRenderGraph runs opm alpha render-graph of package pkg of folder dir,
// once per test binary; tmp is opm's temp dir (it leaves an
// opm-registry-* dir per run).
func opmRenderGraph(tmp, opm, dir, pkg string) ([]byte, error) {
	v, _ := renderedGraphs.LoadOrStore(dir+"\x00"+pkg, &renderedGraph{})
	g := v.(*renderedGraph)
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		g.out, g.err = servers.PeerCommand(ctx, tmp, opm, "alpha", "render-graph", dir, "-p", pkg).Output()
	})
	return g.out, g.err
}

// lineDiff lists what is in only one of two sorted lists.
func lineDiff(want, got []string) string {
	var b strings.Builder
	count := func(l []string) map[string]int {
		m := map[string]int{}
		for _, s := range l {
			m[s]++
		}
		return m
	}
	w, g := count(want), count(got)
	for s, n := range w {
		if g[s] != n {
			fmt.Fprintf(&b, "  opm %d, ours %d: %s\n", n, g[s], s)
		}
	}
	for s, n := range g {
		if _, ok := w[s]; !ok {
			fmt.Fprintf(&b, "  opm 0, ours %d: %s\n", n, s)
		}
	}
	return b.String()
}
