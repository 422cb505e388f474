package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (test/tools.sh chromium installs
// it), or CATALOGSYNC_CHROMIUM.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CATALOGSYNC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not found: `test/tools.sh chromium` installs Debian's chromium package (or set CATALOGSYNC_CHROMIUM)")
	return ""
}

// browser is one headless Chromium tab, recording every console error,
// uncaught exception and error log entry (CSP violations, failed loads).
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("drives headless Chromium: not for -short")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, // containers without user namespaces
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	b := &browser{t: t, ctx: ctx}
	// The first Run starts the browser, with no timeout on its context.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				msg = "console." + string(ev.Type)
				for _, a := range ev.Args {
					msg += " " + string(a.Value) + a.Description
				}
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errs = append(b.errs, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// open loads url, waits for the page's script to have run, and fails the
// test on any console error the load caused.
func (b *browser) open(url string) {
	b.t.Helper()
	b.mu.Lock()
	b.errs = nil
	b.mu.Unlock()
	b.do(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	// Late errors (an image, a fetch) get a moment to be reported.
	b.do(chromedp.Sleep(200 * time.Millisecond))
	b.noErrors(url)
}

// load opens url as open does, reporting its console errors as test
// errors and returning how many there were: a page that fails to set
// data-ready is the caller's to judge.
func (b *browser) load(url string) int {
	b.t.Helper()
	b.mu.Lock()
	b.errs = nil
	b.mu.Unlock()
	// Navigate returns after the load event: the page's script has run.
	b.do(chromedp.Navigate(url), chromedp.Sleep(100*time.Millisecond))
	b.mu.Lock()
	n := len(b.errs)
	b.mu.Unlock()
	b.noErrors(url)
	return n
}

func (b *browser) noErrors(what string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) > 0 {
		b.t.Errorf("%s: console errors:\n  %s", what, strings.Join(b.errs, "\n  "))
	}
	b.errs = nil
}

func evalAs[T any](b *browser, js string) T {
	b.t.Helper()
	return run(b, chromedp.Evaluate[T](js))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	// textContent, not chromedp.Text: that one waits for the element to
	// be visible, which an empty cell never is.
	return strings.TrimSpace(evalAs[string](b, `(function (e) { return e ? e.textContent : "<no element>"; })(document.querySelector(`+strconv.Quote(sel)+`))`))
}

// screenshot saves the page as seen in a 1400x900 window and on a
// 390x844 phone, as name-1400.png and name-390.png, into
// CATALOGSYNC_UI_SCREENSHOTS when set (handlers/ui/screenshots.sh makes
// docs/ui/ this way), then restores the test's window.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("CATALOGSYNC_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	w, h := evalAs[int64](b, `window.innerWidth`), evalAs[int64](b, `window.innerHeight`)
	for _, size := range [][2]int64{{1400, 900}, {390, 844}} {
		b.do(chromedp.EmulateViewport(size[0], size[1]), chromedp.Sleep(100*time.Millisecond))
		png := run(b, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(dir, name+"-"+strconv.FormatInt(size[0], 10)+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do(chromedp.EmulateViewport(w, h))
}

// graphCounts reads, for each drawn channel, the nodes and edges (by
// kind) in its SVG and in the data it was drawn from.
func (b *browser) graphCounts() []string {
	return evalAs[[]string](b, `Array.from(document.querySelectorAll(".graph")).map(function (g) {
		var d = JSON.parse(g.dataset.graph);
		var kinds = function (sel) { var m = {}; g.querySelectorAll(sel).forEach(function (e) { m[e.dataset.kind] = (m[e.dataset.kind] || 0) + 1; }); return JSON.stringify(m); };
		var want = {}; d.edges.forEach(function (e) { want[e.kind] = (want[e.kind] || 0) + 1; });
		return d.channel + " drawn " + g.querySelectorAll("svg g.node").length + " nodes " + kinds("svg path.edge") +
			" data " + d.nodes.length + " nodes " + JSON.stringify(want);
	})`)
}
