package follow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
)

type refreshes struct {
	mu    sync.Mutex
	names []string
}

func (r *refreshes) Refresh(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, name)
}

func (r *refreshes) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.names
	r.names = nil
	return out
}

type catalogs []string

func (c catalogs) Names() ([]string, bool) { return c, true }

func (c catalogs) Has(name string) bool { return slices.Contains(c, name) }

// Only the pointer of a catalog of the cluster, in the store's bucket
// and under its prefix, is read again; any other key is ignored.
func TestChangedReadsOnlyKnownPointers(t *testing.T) {
	t.Parallel()
	var r refreshes
	f := New(nil, catalogs{"cat", "other.x"}, &r, WithBucket("fleet", "team-a/"))
	if err := f.Changed("fleet", "team-a/catalogs/cat/current"); err != nil {
		t.Fatal(err)
	}
	if err := f.Changed("fleet", "team-a/catalogs/other.x/current"); err != nil {
		t.Fatal(err)
	}
	if got := r.take(); !slices.Equal(got, []string{"cat", "other.x"}) {
		t.Fatalf("refreshed %v", got)
	}
	for _, c := range []struct{ bucket, key string }{
		{"other", "team-a/catalogs/cat/current"},
		{"fleet", "catalogs/cat/current"},
		{"fleet", "team-b/catalogs/cat/current"},
		{"fleet", "team-a/catalogs/unknown/current"},
		{"fleet", "team-a/catalogs/cat/meta.json"},
		{"fleet", "team-a/cat/current"},
		{"fleet", "team-a/catalogs/cat/current/x"},
		{"fleet", "team-a/catalogs/../current"},
		{"fleet", "team-a/catalogs//current"},
		{"fleet", "team-a/catalogs/CAT/current"},
		{"fleet", "team-a/catalogs/cat/api/v1/all"},
		{"fleet", "team-a/" + strings.Repeat("a/", 600) + "catalogs/cat/current"},
		{"fleet", ""},
	} {
		if err := f.Changed(c.bucket, c.key); !errors.Is(err, ErrIgnored) {
			t.Errorf("Changed(%q, %.60q) = %v, want ErrIgnored", c.bucket, c.key, err)
		}
	}
	if got := r.take(); len(got) != 0 {
		t.Fatalf("refreshed %v", got)
	}
	if s := f.Stats(); s.Notified != 2 || s.Ignored != 13 {
		t.Fatalf("stats %+v", s)
	}
}

// A poll reads again every pointer it sees first, then only those whose
// ETag changed: published, replaced, deleted.
func TestPollRefreshesChangedPointers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(s string) {
		t.Helper()
		if _, err := store.Put(ctx, catalog.PointerKey("cat"), strings.NewReader(s)); err != nil {
			t.Fatal(err)
		}
	}
	var r refreshes
	f := New(store, catalogs{"cat", "none"}, &r)
	poll := func() []string {
		t.Helper()
		if err := f.PollOnce(ctx); err != nil {
			t.Fatal(err)
		}
		got := r.take()
		slices.Sort(got)
		return got
	}
	if got := poll(); !slices.Equal(got, []string{"cat", "none"}) {
		t.Fatalf("first poll refreshed %v", got)
	}
	if got := poll(); len(got) != 0 {
		t.Fatalf("unchanged pointers refreshed: %v", got)
	}
	put(`{"digest":"a"}`)
	if got := poll(); !slices.Equal(got, []string{"cat"}) {
		t.Fatalf("after publish: %v", got)
	}
	put(`{"digest":"b"}`)
	if got := poll(); !slices.Equal(got, []string{"cat"}) {
		t.Fatalf("after a new publish: %v", got)
	}
	if err := store.Delete(ctx, catalog.PointerKey("cat")); err != nil {
		t.Fatal(err)
	}
	if got := poll(); !slices.Equal(got, []string{"cat"}) {
		t.Fatalf("after delete: %v", got)
	}
	if s := f.Stats(); s.Polled != 3 {
		t.Fatalf("stats %+v", s)
	}
}
