package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
)

// A configured catalog whose stored pointer cannot be read gets its status
// page, not a dead end, with an error code monitoring can see.
func TestUnreadableCatalogPageIsAnError(t *testing.T) {
	store := newStore(t)
	if _, err := store.Put(context.Background(), "catalogs/garbled/current", strings.NewReader("{not json")); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, store, engine.StaticCatalogs{{Name: "garbled", Image: catalogspec.ParseImage("127.0.0.1:1/none/catalog:v1")}}, nil)
	resp, body := get(t, srv.URL+catalogURL("garbled"))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "cannot be read now") {
		t.Fatalf("catalog page of an unreadable catalog: %d %.300s", resp.StatusCode, body)
	}
}
