package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// The grace period and the unconfigured age are inclusive: content out of
// reach for exactly Grace goes, a nanosecond less stays; a catalog
// untouched for exactly UnconfiguredAge goes, a nanosecond less stays.
func TestGCAgesAtTheBoundary(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d0, d1 := digestOf("b0"), digestOf("b1")
	gcContent(t, s, "b", d0, gcBase, 3)
	gcContent(t, s, "b", d1, gcBase.Add(time.Hour), 3)
	publish(t, s, "b", d0, gcBase)
	publish(t, s, "b", d1, gcBase.Add(time.Hour))
	newest := func(prefix string) (last time.Time) {
		l, err := s.List(ctx, prefix)
		if err != nil || len(l) == 0 {
			t.Fatalf("List(%s) = %v, %v", prefix, l, err)
		}
		for _, in := range l {
			last = gcLater(last, in.ModTime)
		}
		return last
	}
	// d0 was reachable until the swap, the pointer's last write.
	swap := newest(catalogPrefix("b") + currentFile)
	const grace = time.Hour
	at := func(t time.Time) func() time.Time { return func() time.Time { return t } }
	rep := gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, DryRun: true, Now: at(swap.Add(grace - 1))})
	if r := gcReasons(rep.Kept)["b "+d0]; r != GCInGrace {
		t.Fatalf("a nanosecond before the grace ends: d0 %q, want kept in grace", r)
	}
	rep = gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, DryRun: true, Now: at(swap.Add(grace))})
	if r := gcReasons(rep.Deleted)["b "+d0]; r != GCOld {
		t.Fatalf("when the grace ends: d0 %q, want deleted", r)
	}

	gcContent(t, s, "gone", digestOf("g0"), gcBase, 3)
	touched := newest(catalogPrefix("gone"))
	const age = 2 * time.Hour
	removed := func(now time.Time) bool {
		rep := gcRunT(t, s, GCOptions{Catalogs: []string{"b"}, Grace: grace, UnconfiguredAge: age, DryRun: true, Now: at(now)})
		return gcReasons(rep.Deleted)["gone "] == GCRemovedCatalog
	}
	if removed(touched.Add(age - 1)) {
		t.Fatal("unconfigured catalog removed a nanosecond before its age")
	}
	if !removed(touched.Add(age)) {
		t.Fatal("unconfigured catalog not removed at its age")
	}
}

// Evicting down to exactly the size cap meets it: no problem reported.
func TestGCCapMetExactly(t *testing.T) {
	s := newStore(t)
	a1, a2, ac := digestOf("x1"), digestOf("x2"), digestOf("xc")
	var limit int64
	for i, d := range []string{a1, a2, ac} {
		m := gcContent(t, s, "a", d, gcBase.Add(time.Duration(i)*time.Hour), 20)
		if d == a2 {
			in, err := s.Stat(context.Background(), contentPrefix("a", d)+metaFile)
			if err != nil {
				t.Fatal(err)
			}
			limit = m.Size + m.IndexSize + m.GraphQLSize + in.Size // room for a2 alone
		}
	}
	publish(t, s, "a", ac, gcBase)
	rep := gcRunT(t, s, GCOptions{MaxInactiveBytes: limit, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 1 || r["a "+a1] != GCOverSize || rep.InactiveBytes != limit {
		t.Fatalf("deleted %v, inactive %d bytes; want a1 over the cap, %d", r, rep.InactiveBytes, limit)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("cap met, but problems %q", rep.Problems)
	}
}

// gcDeleteFailStore fails Delete of keys with the given suffix.
type gcDeleteFailStore struct {
	storage.Store
	suffix string
}

func (f *gcDeleteFailStore) Delete(ctx context.Context, key string) error {
	if strings.HasSuffix(key, f.suffix) {
		return errInjected
	}
	return f.Store.Delete(ctx, key)
}

// Removing an unconfigured catalog deletes its pointer, then every
// meta.json, then the rest: interrupted in between, no digest is left
// looking complete with part of its files gone. Catches the delete order's
// comparison (rank(a)-rank(b)) broken, which deletes in listing order.
func TestGCRemovalOrderKeepsDigestsWholeOnFailure(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds := gcHistory(t, s, "old", 2)
	fail := &gcDeleteFailStore{Store: s, suffix: "/" + indexFile}
	_, err := GC(ctx, fail, GCOptions{Catalogs: []string{"other"}, UnconfiguredAge: -1, Now: gcAfterGrace})
	if !errors.Is(err, errInjected) {
		t.Fatalf("GC: %v, want the injected failure", err)
	}
	if _, err := s.Stat(ctx, catalogPrefix("old")+currentFile); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("pointer still there: %v", err)
	}
	for _, d := range ds {
		if _, ok, err := HasContent(ctx, s, "old", d); err != nil || ok {
			t.Errorf("%s still complete (%v, %v) after an interrupted removal", d, ok, err)
		}
	}
}

// A catalog whose pointer does not parse is left alone: a dry run reports
// nothing of it to delete, and a real run neither deletes nor rewrites any
// of its meta.json. Catches planCatalog going on after current said to
// leave the catalog (|| turned into &&).
func TestGCUnreadablePointerLeftAlone(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	gcHistory(t, s, "broken", 3)
	if _, err := s.Put(ctx, catalogPrefix("broken")+currentFile, strings.NewReader("{garbage")); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace, DryRun: dry})
		if len(rep.Deleted) != 0 || len(rep.Kept) != 0 {
			t.Errorf("dry run %v: deleted %v, kept %v; want the catalog left out", dry, gcReasons(rep.Deleted), gcReasons(rep.Kept))
		}
		if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "unreadable pointer") {
			t.Errorf("dry run %v: problems %q", dry, rep.Problems)
		}
	}
}

// Content never published goes once out of grace like any other
// non-current content; a pointer deleted between GC's listing and its
// read (another GC removing the catalog) counts as swapped just now, so
// the content it named stays for the grace period. Catches the test of a
// listed pointer (c.current != nil) inverted.
func TestGCPointerMissing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	never := digestOf("never")
	gcContent(t, s, "n", never, gcBase, 3)
	rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace, DryRun: true})
	if r := gcReasons(rep.Deleted)["n "+never]; r != GCOld {
		t.Errorf("never-published content out of grace: %q, want deleted", r)
	}

	s = newStore(t)
	ds := gcHistory(t, s, "g", 2)
	hs := &gcListHookStore{Store: s, hook: func() {
		if err := s.Delete(ctx, catalogPrefix("g")+currentFile); err != nil {
			t.Fatal(err)
		}
	}}
	rep = gcRunT(t, hs, GCOptions{Keep: -1, Now: gcAfterGrace, DryRun: true})
	k := gcReasons(rep.Kept)
	if len(rep.Deleted) != 0 || k["g "+ds[0]] != GCInGrace || k["g "+ds[1]] != GCInGrace {
		t.Errorf("pointer deleted after the listing: deleted %v, kept %v; want both in grace", gcReasons(rep.Deleted), k)
	}
}

// gcPointerListHookStore runs hook once, before the first List of exactly
// the prefix given: GC's listing of a pointer to learn its swap time.
type gcPointerListHookStore struct {
	storage.Store
	prefix string
	hook   func()
}

func (l *gcPointerListHookStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if prefix == l.prefix && l.hook != nil {
		l.hook()
		l.hook = nil
	}
	return l.Store.List(ctx, prefix)
}

// A pointer swapped again after GC read it counts as swapped just now:
// the older content stays for the grace period rather than being judged
// by the new pointer's time. Catches swapTime accepting a listed pointer
// of another version (key && etag turned into ||).
func TestGCPointerSwappedWhileReading(t *testing.T) {
	s := newStore(t)
	ds := gcHistory(t, s, "w", 2)
	next := digestOf("w next")
	gcContent(t, s, "w", next, gcBase.Add(5*time.Hour), 3)
	hs := &gcPointerListHookStore{Store: s, prefix: catalogPrefix("w") + currentFile,
		hook: func() { publish(t, s, "w", next, gcBase.Add(5*time.Hour)) }}
	rep := gcRunT(t, hs, GCOptions{Keep: -1, Now: gcAfterGrace})
	if hs.hook != nil {
		t.Fatal("GC never listed the pointer")
	}
	k := gcReasons(rep.Kept)
	if len(rep.Deleted) != 0 || k["w "+ds[0]] != GCInGrace {
		t.Errorf("deleted %v, kept %v; want %s kept in grace", gcReasons(rep.Deleted), k, ds[0])
	}
	gcCheckServes(t, s, "w")
}

// A pointer set, with its content, between GC's listing and its reading
// of the pointer is checked again in the store and found complete: GC
// goes on without an error or a problem. Catches the error test of that
// second look (err != nil) inverted.
func TestGCCurrentWrittenAfterListing(t *testing.T) {
	s := newStore(t)
	ds := gcHistory(t, s, "late", 1)
	d := digestOf("late whole")
	hs := &gcListHookStore{Store: s, hook: func() {
		gcContent(t, s, "late", d, gcBase.Add(time.Hour), 3)
		publish(t, s, "late", d, gcBase.Add(time.Hour))
	}}
	rep, err := GC(context.Background(), hs, GCOptions{Keep: -1, Grace: time.Hour})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if k := gcReasons(rep.Kept); len(rep.Deleted) != 0 || len(rep.Problems) != 0 || k["late "+ds[0]] != GCInGrace {
		t.Fatalf("deleted %v, kept %v, problems %q", gcReasons(rep.Deleted), k, rep.Problems)
	}
	gcCheckServes(t, s, "late")
}

// With Keep 1, the newest non-current digest stays and the next one goes,
// also without -short. Catches planAge's i < keepNewest moved by one or
// inverted.
func TestGCKeepOne(t *testing.T) {
	s := newStore(t)
	ds := gcHistory(t, s, "k", 4)
	rep := gcRunT(t, s, GCOptions{Keep: 1, Now: gcAfterGrace, DryRun: true})
	k, d := gcReasons(rep.Kept), gcReasons(rep.Deleted)
	if k["k "+ds[3]] != GCCurrent || k["k "+ds[2]] != GCRecent || d["k "+ds[1]] != GCOld || d["k "+ds[0]] != GCOld {
		t.Fatalf("kept %v, deleted %v", k, d)
	}
}
