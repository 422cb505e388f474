package catalog

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// counting counts the Puts that reach a store; Commit puts several
// objects at once.
type counting struct {
	storage.Store
	puts atomic.Int64
}

func (c *counting) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, r)
}

// TestMarkConfiguredKeepsCatalogs: a catalog one replica configures, and
// that nothing publishes or polls, survives GC by a replica that does not
// list it, as long as the first keeps marking it; marks are rewritten
// only when stale.
func TestMarkConfiguredKeepsCatalogs(t *testing.T) {
	ctx := context.Background()
	base, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &counting{Store: base}
	gcHistory(t, s, "quiet", 1)
	gcHistory(t, s, "mine", 1)
	// Long after the last publish, the replica that lists "quiet" marks it.
	later := time.Now().Add(48 * time.Hour)
	if err := MarkConfigured(ctx, s, []string{"quiet"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	puts := s.puts.Load()
	if err := MarkConfigured(ctx, s, []string{"quiet"}, time.Hour); err != nil || s.puts.Load() != puts {
		t.Fatalf("a fresh mark was rewritten (err %v)", err)
	}
	// GC by the other replica, whose clock is past the unconfigured age of
	// the publish but not of the mark.
	rep := gcRunT(t, s, GCOptions{Catalogs: []string{"mine"}, Now: func() time.Time { return later.Add(-47 * time.Hour) }})
	if r := gcReasons(rep.Kept); r["quiet "] != GCRecentlyUsed {
		t.Fatalf("marked catalog not kept: %v", r)
	}
	if _, _, err := Current(ctx, s, "quiet"); err != nil {
		t.Fatal(err)
	}
	// Without marks for the unconfigured age it goes.
	rep = gcRunT(t, s, GCOptions{Catalogs: []string{"mine"}, Now: func() time.Time { return later }})
	if r := gcReasons(rep.Deleted); r["quiet "] != GCRemovedCatalog {
		t.Fatalf("unmarked catalog kept: %v", r)
	}
	if MarkConfigured(ctx, s, []string{"../x"}, time.Hour) == nil {
		t.Fatal("an invalid name is refused")
	}
}

// MarkConfigured writes the mark of every listed catalog and refuses a
// bad name.
func TestMarkConfiguredWrites(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := MarkConfigured(ctx, st, []string{"a", "b"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := st.Stat(ctx, catalogPrefix(n)+configuredFile); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := MarkConfigured(ctx, st, []string{"../x"}, time.Hour); err == nil {
		t.Error("a bad name was marked")
	}
}
