package content

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/storagetest"
)

func storeOps(cs *storagetest.Counting) int {
	stats, gets, _ := cs.Snapshot()
	n := 0
	for _, v := range stats {
		n += v
	}
	for _, v := range gets {
		n += v
	}
	return n
}

// Requests for a catalog that is not published cost one store read per
// pointer TTL, not one each; names the availability hook refuses cost none.
// A publish in this process (Invalidate) is seen at once.
func TestUnknownCatalogsCostNoStoreReads(t *testing.T) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := storagetest.NewCounting(st)
	h := New(cs, WithPointerTTL(time.Hour), WithLogger(slog.New(slog.DiscardHandler)),
		WithAvailability(func(name string) bool { return name == "ghost" }))
	get := func(name string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/catalogs/"+name+"/api/v1/all", nil))
		return w.Code
	}
	for i := range 500 {
		if code := get("ghost"); code != 404 {
			t.Fatalf("unpublished catalog: %d", code)
		}
		if code := get(fmt.Sprintf("random-%d", i)); code != 404 {
			t.Fatalf("unknown catalog: %d", code)
		}
	}
	if n := storeOps(cs); n > 1 {
		t.Fatalf("1000 requests for missing catalogs made %d store operations, want at most 1", n)
	}
	objs, _ := tinyObjects(t)
	store(t, st, "ghost", "v1", objs)
	h.Invalidate("ghost")
	if code := get("ghost"); code != 200 {
		t.Fatalf("after publish and Invalidate: %d", code)
	}
}
