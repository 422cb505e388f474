package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// axeSource reads the vendored axe-core (testdata/axe, see vendor.sh),
// checked against its recorded sum.
func axeSource(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "handlers/ui/testdata/axe")
	src, err := os.ReadFile(filepath.Join(dir, "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if want, _, _ := strings.Cut(string(sums), " "); want != hex.EncodeToString(sum[:]) {
		t.Fatalf("axe.min.js sha256 %x, SHA256SUMS says %s: run testdata/axe/vendor.sh", sum, want)
	}
	return string(src)
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Nodes  int    `json:"nodes"`
	Target string `json:"target"`
}

// axeRun runs axe-core's WCAG 2.x A and AA rules and best practices on
// the open page. Evaluated through DevTools, axe is not subject to the
// page's script policy, and the page's own scripts are not changed.
func (b *browser) axeRun(src string) []axeViolation {
	b.t.Helper()
	run(b, chromedp.Evaluate[any](src+";0"))
	js := `axe.run(document, {resultTypes: ["violations"]}).then(function (r) {
		return JSON.stringify(r.violations.map(function (v) {
			return {id: v.id, impact: v.impact || "", nodes: v.nodes.length, target: String(v.nodes[0] && v.nodes[0].target)};
		}));
	})`
	var out []axeViolation
	if err := json.Unmarshal([]byte(run(b, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))), &out); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// Every page type has no serious or critical accessibility violation
// under axe-core, at 1400 and at 390 px.
func TestAccessibility(t *testing.T) {
	b := newBrowser(t)
	src := axeSource(t)
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	syncDir(t, store, "edge", filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs"))
	syncDir(t, store, "edge", edgeCatalog(t))
	set := engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")}, {Name: "broken", Image: catalogspec.ParseImage("127.0.0.1:1/none/catalog:v1")}}
	srv := startServer(t, store, set, nil, engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: time.Hour}))
	op, err := srv.engine.Trigger(context.Background(), "broken", "test")
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, srv.engine, op.ID)
	pages := []struct{ kind, path string }{
		{"home", "/"},
		{"catalogs", Prefix + "/"},
		{"catalog", catalogURL("edge")},
		{"search", catalogURL("edge") + "?q=v1.1"},
		{"package", packageURL("edge", "single-entry")},
		{"package (75-entry channel)", packageURL("edge", "long-channel")},
		{"package (odd names)", packageURL("edge", "odd-names")},
		{"package (Markdown)", packageURL("edge", "markdown-description")},
		{"package (deprecated)", packageURL("edge", "deprecated-things")},
		{"bundle", bundleURL("edge", "markdown-description", "markdown-description.v1.0.0")},
		{"changes", catalogURL("edge") + "changes"},
		{"catalog not published", catalogURL("broken")},
		{"error", catalogURL("edge") + "packages/none/"},
	}
	var table strings.Builder
	table.WriteString("| page | width | critical | serious | moderate | minor |\n|---|---|---|---|---|---|\n")
	for _, width := range []int64{1400, 390} {
		b.do(chromedp.EmulateViewport(width, 900))
		for _, p := range pages {
			b.t = t
			if p.kind == "error" {
				b.do(chromedp.Navigate(srv.URL + p.path))
				b.mu.Lock()
				b.errs = nil // the 404 itself is logged
				b.mu.Unlock()
			} else {
				b.load(srv.URL + p.path)
			}
			if p.kind == "catalogs" || p.kind == "catalog not published" {
				// Rows are complete after the first poll of the API.
				for deadline := time.Now().Add(time.Minute); b.text(".phase") == "…"; {
					if time.Now().After(deadline) {
						t.Fatalf("%s: phase never shown", p.path)
					}
					b.do(chromedp.Sleep(100 * time.Millisecond))
				}
			}
			count := map[string]int{}
			for _, v := range b.axeRun(src) {
				count[v.Impact]++
				if v.Impact == "serious" || v.Impact == "critical" {
					t.Errorf("%d px %s (%s): %s %s on %d elements, first %s", width, p.kind, p.path, v.Impact, v.ID, v.Nodes, v.Target)
				} else {
					t.Logf("%d px %s: %s %s on %d elements, first %s", width, p.kind, v.Impact, v.ID, v.Nodes, v.Target)
				}
			}
			fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d |\n", p.kind, width, count["critical"], count["serious"], count["moderate"], count["minor"])
		}
	}
	t.Logf("axe-core violations (rules) by impact:\n%s", table.String())
}
