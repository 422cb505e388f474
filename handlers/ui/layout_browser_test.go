package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// brokenWordsJS lists the words of the page (outside pre and code) laid
// out on two lines between two letters or digits: "progres|s". A break
// after "-" or "/" is where text may wrap.
const brokenWordsJS = `(function () {
	var out = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	var top = function (n, i, j) {
		var r = document.createRange();
		r.setStart(n, i);
		r.setEnd(n, j);
		var rects = Array.from(r.getClientRects()).filter(function (c) { return c.width > 0; });
		return rects.length ? Math.round(rects[0].top) : null;
	};
	var alnum = /[\p{L}\p{N}]/u;
	for (var n = walker.nextNode(); n; n = walker.nextNode()) {
		if (n.parentElement.closest("pre, code, svg, title, script, style")) continue;
		var re = /\S{2,}/g, m;
		while ((m = re.exec(n.data)) && out.length < 20) {
			var s = m.index, e = s + m[0].length;
			if (top(n, s, s + 1) === top(n, e - 1, e)) continue;
			for (var i = s; i + 1 < e; i++) {
				var a = top(n, i, i + 1), b = top(n, i + 1, i + 2);
				if (a !== null && b !== null && a !== b && alnum.test(n.data[i]) && alnum.test(n.data[i + 1])) {
					out.push(m[0].slice(Math.max(0, i - s - 20), i - s + 1) + "|" + n.data.slice(i + 1, Math.min(e, i + 21)));
					break;
				}
			}
		}
	}
	return out;
})()`

// overflowJS is how far the page is wider than the window: 0 when
// nothing but a table's own scroller overflows.
const overflowJS = `Math.max(0, document.documentElement.scrollWidth - window.innerWidth)`

// No page breaks a word inside its letters, at 1400 px or on a 390 px
// phone, and none is wider than a phone's window: long names are cut
// with their full text on hover and focus, tables scroll on their own.
func TestLayoutNeverBreaksWords(t *testing.T) {
	b := newBrowser(t)
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	set := engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")},
		{Name: "a-catalog-with-a-rather-long-name-for-a-table-cell", Image: catalogspec.ParseImage("127.0.0.1:1/" + strings.Repeat("very-long-repository-path/", 6) + "catalog:v4.21")}}
	srv := startServer(t, store, set, nil, engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: time.Hour}))
	op, err := srv.engine.Trigger(context.Background(), set[1].Name, "test")
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, srv.engine, op.ID)
	pages := []string{Prefix + "/", catalogURL("edge"), catalogURL(set[1].Name),
		bundleURL("edge", "odd-names", "odd-names.v1.4.0-"+strings.Repeat("verylongprerelease", 14)),
		bundleURL("edge", "markdown-description", "markdown-description.v1.0.0")}
	for _, p := range packageNames(t, store, "edge") {
		pages = append(pages, packageURL("edge", p))
	}
	for _, width := range []int64{1400, 390} {
		b.do(chromedp.EmulateViewport(width, 900))
		for _, p := range pages {
			b.t = t
			b.open(srv.URL + p)
			if p == Prefix+"/" || p == catalogURL(set[1].Name) {
				// The failure's message arrives with the first poll.
				for deadline := time.Now().Add(time.Minute); b.text(".last-error:not(:empty)") == "<no element>"; {
					if time.Now().After(deadline) {
						t.Fatalf("%s: no error shown", p)
					}
					b.do(chromedp.Sleep(100 * time.Millisecond))
				}
			}
			if words := evalAs[[]string](b, brokenWordsJS); len(words) > 0 {
				t.Errorf("%d px %s: words broken across lines: %q", width, p, words)
			}
			if width == 390 {
				if px := evalAs[int](b, overflowJS); px > 0 {
					t.Errorf("%d px %s: the page is %d px wider than the window", width, p, px)
				}
			}
		}
	}
}

// A 75-entry channel opens with its head in view, and every node of
// every graph can be reached with the keyboard: a link to its bundle
// named by its text, or a focusable group labelled with its name.
func TestGraphHeadInViewAndNodesFocusable(t *testing.T) {
	b := newBrowser(t)
	store := newStore(t)
	syncDir(t, store, "edge", edgeCatalog(t))
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "edge", Image: catalogspec.ParseImage("example.test/edge:v1")}}, nil)
	for _, width := range []int64{1400, 390} {
		b.do(chromedp.EmulateViewport(width, 900))
		b.open(srv.URL + packageURL("edge", "long-channel"))
		visible := evalAs[bool](b, `(function () {
			var box = document.querySelector(".graph"), head = box.querySelector("g.node.head");
			var a = box.getBoundingClientRect(), h = head.getBoundingClientRect();
			return h.left >= a.left && h.right <= a.right && h.top >= a.top && h.bottom <= a.bottom;
		})()`)
		if !visible {
			t.Errorf("%d px: the head of the 75-entry channel is not in view when the page opens", width)
		}
	}
	b.screenshot("package-long-channel")
	b.open(srv.URL + packageURL("edge", "odd-names"))
	b.screenshot("package-odd-names")
	b.open(srv.URL + packageURL("edge", "markdown-description"))
	b.screenshot("package-markdown")
	for _, p := range packageNames(t, store, "edge") {
		b.open(srv.URL + packageURL("edge", p))
		n := evalAs[[]int](b, `(function () {
			var nodes = document.querySelectorAll(".graph svg g.node");
			var reach = Array.from(nodes).filter(function (g) { var f = g.parentElement; return f.tagName === "a" && f.hasAttribute("href") && g.textContent || f.getAttribute("tabindex") === "0" && f.getAttribute("aria-label"); });
			return [nodes.length, reach.length];
		})()`)
		if n[0] == 0 || n[0] != n[1] {
			t.Errorf("%s: %d of %d nodes reachable by keyboard", p, n[1], n[0])
		}
	}
	// Tab from the graph's box reaches its first node.
	b.open(srv.URL + packageURL("edge", "skips-only"))
	b.do(chromedp.Focus(chromedp.CSS(".graph")))
	b.do(chromedp.KeyEvent("\t"))
	if got := evalAs[string](b, `document.activeElement.textContent`); !strings.HasPrefix(got, "skips-only.v") {
		t.Errorf("Tab from the graph focused %q", got)
	}
}
