package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/fs"
)

// With LeftoverAge zero, GC removes interrupted writes only once a day old
// (DefaultLeftoverAge): a two-hour-old temp file may be a slow writer's.
// Catches the default becoming zero (24*time.Hour to 24/time.Hour), which
// removes every temp file, live ones included.
func TestGCLeftoverDefaultAge(t *testing.T) {
	s, _, dir := gcLeftoverStore(t)
	tmp := filepath.Join(dir, fs.TempPrefix+"0123456789abcdef")
	if err := os.WriteFile(tmp, make([]byte, 123), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		age  time.Duration
		gone bool
	}{{2 * time.Hour, false}, {DefaultLeftoverAge + time.Hour, true}} {
		old := time.Now().Add(-tc.age)
		if err := os.Chtimes(tmp, old, old); err != nil {
			t.Fatal(err)
		}
		rep := gcRunT(t, s, GCOptions{DryRun: true})
		if gone := len(rep.Deleted) == 1 && rep.Deleted[0].Reason == GCLeftover; gone != tc.gone || len(rep.Deleted) > 1 {
			t.Errorf("temp file %v old, default age: deleted %+v, want gone %v", tc.age, rep.Deleted, tc.gone)
		}
	}
}

// An old digest goes whole, objects GC does not know included, those
// that list after meta.json too (as a later version's new file might).
// Catches the delete loop stopping at meta.json (continue turned into
// break), which would leave them stored for ever.
func TestGCDeletesWholeDigest(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds := gcHistory(t, s, "z", 2)
	extra := contentPrefix("z", ds[0]) + "sbom.json" // lists after meta.json
	if _, err := s.Put(ctx, extra, strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); r["z "+ds[0]] != GCOld {
		t.Fatalf("deleted %v", r)
	}
	if got := gcDigestsIn(t, s, "z", ds[:1]); len(got) != 0 {
		left, _ := s.List(ctx, contentPrefix("z", ds[0]))
		t.Fatalf("deleted digest left %v", gcKeys(left))
	}
}

// A publish that lands on content while GC deletes it is reported as a
// problem, so an operator learns the catalog is served from deleted
// content until its next sync. Catches the check after the delete
// (err == nil) inverted, which never reports it.
func TestGCReportsPublishDuringDelete(t *testing.T) {
	s := newStore(t)
	ds := gcHistory(t, s, "race", 2)
	ls := &gcRepublishingStore{Store: s, t: t, name: "race", after: contentFile, at: gcBase}
	rep := gcRunT(t, ls, GCOptions{Keep: -1, Now: gcAfterGrace})
	if !ls.done {
		t.Fatal("GC deleted no catalog.jsonl")
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "published "+ds[0]+" while gc deleted it") {
		t.Fatalf("problems %q, want the publish during the delete", rep.Problems)
	}
}

// LeftoverAge bounds which interrupted writes go: with an hour, a
// half-hour-old temp file stays and a two-hour-old one goes; negative
// takes any age. A temp file directly under catalogs/ is no catalog's.
// Catches the 0 and negative cases of LeftoverAge mixed up (== 0 or < 0
// inverted) and a leftover's catalog taken from a key with no catalog
// directory (&& turned into ||).
func TestGCLeftoverAges(t *testing.T) {
	s, root, dir := gcLeftoverStore(t)
	inDigest := filepath.Join(dir, fs.TempPrefix+"0123456789abcdef")
	atRoot := filepath.Join(root, "catalogs", fs.TempPrefix+"fedcba9876543210")
	for _, tc := range []struct {
		leftoverAge, fileAge time.Duration
		gone                 bool
	}{
		{time.Hour, 30 * time.Minute, false},
		{time.Hour, 2 * time.Hour, true},
		{-1, 0, true},
	} {
		for _, p := range []string{inDigest, atRoot} {
			if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-tc.fileAge)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		rep := gcRunT(t, s, GCOptions{LeftoverAge: tc.leftoverAge, DryRun: true})
		if !tc.gone {
			if len(rep.Deleted) != 0 {
				t.Errorf("LeftoverAge %v, file %v old: deleted %+v", tc.leftoverAge, tc.fileAge, rep.Deleted)
			}
			continue
		}
		cats := map[string]string{}
		for _, it := range rep.Deleted {
			cats[filepath.Base(it.Keys[0])] = it.Catalog
		}
		if len(rep.Deleted) != 2 || cats[filepath.Base(inDigest)] != "l" || cats[filepath.Base(atRoot)] != "" {
			t.Errorf("LeftoverAge %v, file %v old: deleted %+v, want both, of catalogs l and none", tc.leftoverAge, tc.fileAge, rep.Deleted)
		}
	}
}
