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

// A catalog whose sync failed has a page of its own: its phase, last
// error, failures and next retry as the API reports them, and links back;
// its package pages answer 404 with a link to it.
func TestUnpublishedCatalogPage(t *testing.T) {
	b := newBrowser(t)
	store := newStore(t)
	// Nothing listens on port 1: every sync of it fails, retryably.
	set := engine.StaticCatalogs{{Name: "broken", Image: catalogspec.ParseImage("127.0.0.1:1/none/catalog:v1")}}
	// Retried an hour later: the page shows the state the failure left.
	srv := startServer(t, store, set, nil, engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: time.Hour}))
	op, err := srv.engine.Trigger(context.Background(), "broken", "test")
	if err != nil {
		t.Fatal(err)
	}
	if done := waitOp(t, srv.engine, op.ID); done.State != engine.OpFailed {
		t.Fatalf("sync of broken: %+v", done)
	}
	if resp, body := get(t, srv.URL+catalogURL("broken")); resp.StatusCode != 200 {
		t.Fatalf("catalog page: %d %.300s", resp.StatusCode, body)
	}
	b.open(srv.URL + catalogURL("broken"))
	// The sync state comes from the API, after the first poll.
	for deadline := time.Now().Add(time.Minute); b.text("#status .phase") == "…"; {
		if time.Now().After(deadline) {
			t.Fatal("phase never shown")
		}
		b.do(chromedp.Sleep(100 * time.Millisecond))
	}
	if got := b.text("#status .phase"); got != "Failed" {
		t.Errorf("phase %q", got)
	}
	if got := b.text("#status .last-error"); !strings.Contains(got, ":") {
		t.Errorf("last error %q", got)
	}
	if got := b.text("#status .failures"); got != "1" {
		t.Errorf("failures %q", got)
	}
	if got := b.text("#status .next-retry"); !strings.Contains(got, "UTC") {
		t.Errorf("next retry %q", got)
	}
	if n := evalAs[int](b, `document.querySelectorAll('main a[href="/ui/"]').length`); n == 0 {
		t.Error("no link back to the catalogs")
	}
	b.screenshot("catalog-failed")
	// Below it, a 404 that leads to it.
	resp, body := get(t, srv.URL+packageURL("broken", "any"))
	if resp.StatusCode != 404 || !strings.Contains(body, `href="`+catalogURL("broken")+`"`) {
		t.Errorf("package of an unpublished catalog: %d %.300s", resp.StatusCode, body)
	}
}
