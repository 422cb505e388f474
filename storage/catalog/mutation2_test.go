package catalog

// Tests written against the mutants of the second mutation run that
// survived or that no -short test reached; see mutation_test.go.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// commitWithFiles writes a small catalog of name at digest with the given
// per-file summary (nil: none) and returns the meta HasContent reads back.
func commitWithFiles(t *testing.T, s storage.Store, name, digest string, files []byte) Meta {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(ctx, s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, n := range []string{"a", "b", "c"} {
		line := []byte(`{"schema":"olm.bundle","package":"p","name":"` + n + `"}` + "\n")
		if err := w.Add("olm.bundle", "p", n, line); err != nil {
			t.Fatal(err)
		}
	}
	w.SetFiles(files)
	if _, err := w.Commit(ctx, Meta{}); err != nil {
		t.Fatal(err)
	}
	m, ok, err := HasContent(ctx, s, name, digest)
	if err != nil || !ok {
		t.Fatalf("HasContent = %v, %v", ok, err)
	}
	return m
}

// A stored summary reads back whole through OpenFiles, and its size is in
// meta.json. Catches putFiles dropping or failing a normal summary and
// OpenFiles refusing a valid meta (checks of name, digest or size inverted).
func TestFilesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files")
	summary := []byte("per-file facts")
	m := commitWithFiles(t, s, "f", d, summary)
	if m.FilesSize != int64(len(summary)) {
		t.Fatalf("FilesSize %d, want %d", m.FilesSize, len(summary))
	}
	rc, err := OpenFiles(ctx, s, m)
	if err != nil {
		t.Fatalf("OpenFiles: %v", err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err != nil || !bytes.Equal(b, summary) {
		t.Fatalf("read %q, %v; want %q", b, err, summary)
	}
	for _, bad := range []struct {
		m    Meta
		want error
	}{
		{Meta{Name: "../f", Digest: d, FilesSize: m.FilesSize}, ErrInvalidName},
		{Meta{Name: "f", Digest: "sha256:x", FilesSize: m.FilesSize}, ErrInvalidDigest},
	} {
		if rc, err := OpenFiles(ctx, s, bad.m); !errors.Is(err, bad.want) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("OpenFiles(%q, %q): %v, want %v", bad.m.Name, bad.m.Digest, err, bad.want)
		}
	}
}

// A store failure writing the summary fails Commit and leaves the content
// incomplete. Catches the Put error check of putFiles inverted.
func TestFilesWriteFailure(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files-fail")
	w, err := NewWriter(ctx, &faultyStore{Store: s, suffix: "/" + filesFile}, "f", d)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Add("olm.bundle", "p", "a", []byte(`{"schema":"olm.bundle","package":"p","name":"a"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	w.SetFiles([]byte("facts"))
	if _, err := w.Commit(ctx, Meta{}); !errors.Is(err, errInjected) {
		t.Fatalf("Commit: %v, want the store's failure", err)
	}
	if _, ok, err := HasContent(ctx, s, "f", d); err != nil || ok {
		t.Fatalf("content complete (%v, %v) without its summary", ok, err)
	}
}

// A meta.json whose summary size is none (0), negative or past
// MaxFilesSize has no summary, even where a summary object is stored (left
// by an earlier writer of the digest, or a meta.json damaged by hand).
// Catches OpenFiles' size bounds loosened (<= 0 to < 0, || to &&), which
// would hand out that object, or all of it for a negative size.
func TestFilesNoneWhenMetaSaysNone(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("files-stale")
	m := commitWithFiles(t, s, "f", d, []byte("old facts"))
	if err := s.Delete(ctx, contentPrefix("f", d)+metaFile); err != nil { // as GC's first step
		t.Fatal(err)
	}
	m = commitWithFiles(t, s, "f", d, nil) // written again, without a summary
	if m.FilesSize != 0 {
		t.Fatalf("FilesSize %d without a summary", m.FilesSize)
	}
	for _, size := range []int64{0, -1, MaxFilesSize + 1} {
		m.FilesSize = size
		rc, err := OpenFiles(ctx, s, m)
		if err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("FilesSize %d: read %q, want no summary", size, b)
		} else if !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("FilesSize %d: %v, want ErrNotExist", size, err)
		}
	}
}

// bigFilesStore keeps summary objects as their length alone and serves
// them as zeros, so a summary of MaxFilesSize bytes costs no disk.
type bigFilesStore struct {
	storage.Store
	mu   sync.Mutex
	size map[string]int64
}

func (b *bigFilesStore) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if !strings.HasSuffix(key, "/"+filesFile) {
		return b.Store.Put(ctx, key, r)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return storage.Info{}, err
	}
	b.mu.Lock()
	b.size[key] = n
	b.mu.Unlock()
	return storage.Info{Key: key, Size: n}, nil
}

func (b *bigFilesStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b.mu.Lock()
	size, ok := b.size[key]
	b.mu.Unlock()
	if !strings.HasSuffix(key, "/"+filesFile) {
		return b.Store.Get(ctx, key, off, n)
	}
	if !ok {
		return nil, storage.ErrNotExist
	}
	left := size - min(off, size)
	if n >= 0 {
		left = min(left, n)
	}
	return io.NopCloser(io.LimitReader(zeros{}, left)), nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A summary of exactly MaxFilesSize bytes is stored and read back whole;
// one byte more is not stored and the content is complete without it.
// Catches either bound moved by one (> to >= in putFiles or OpenFiles).
func TestFilesSizeBound(t *testing.T) {
	ctx := context.Background()
	s := &bigFilesStore{Store: newStore(t), size: map[string]int64{}}
	for _, size := range []int{MaxFilesSize, MaxFilesSize + 1} {
		d := digestOf(size)
		m := commitWithFiles(t, s, "f", d, make([]byte, size))
		if size > MaxFilesSize {
			if m.FilesSize != 0 {
				t.Fatalf("summary of %d bytes stored (FilesSize %d)", size, m.FilesSize)
			}
			if _, err := OpenFiles(ctx, s, m); !errors.Is(err, storage.ErrNotExist) {
				t.Fatalf("summary of %d bytes: %v, want none", size, err)
			}
			continue
		}
		if m.FilesSize != int64(size) {
			t.Fatalf("summary of %d bytes: FilesSize %d", size, m.FilesSize)
		}
		rc, err := OpenFiles(ctx, s, m)
		if err != nil {
			t.Fatalf("summary of %d bytes: %v", size, err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != int64(size) {
			t.Fatalf("summary of %d bytes: read %d, %v", size, n, err)
		}
	}
}

// OpenLines serves every range within catalog.jsonl, empty ones at either
// end included, byte for byte, and refuses every range reaching outside
// it (a negative length would read to the end). Catches each bound of
// OpenLines moved by one, inverted, joined with the wrong operator, or
// Size-off turned into Size+off, and the name and digest checks inverted.
func TestOpenLinesRanges(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := digestOf("lines")
	m := commitWithFiles(t, s, "l", d, nil)
	rc, err := s.Get(ctx, contentPrefix("l", d)+contentFile, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || int64(len(whole)) != m.Size || m.Size < 2 {
		t.Fatalf("catalog.jsonl: %d bytes (%v), meta says %d", len(whole), err, m.Size)
	}
	S := m.Size
	for _, r := range [][2]int64{{0, S}, {0, 0}, {S, 0}, {1, S - 1}, {S - 1, 1}, {1, 0}} {
		rc, err := OpenLines(ctx, s, m, r[0], r[1])
		if err != nil {
			t.Errorf("range %d+%d of %d: %v", r[0], r[1], S, err)
			continue
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if want := whole[r[0] : r[0]+r[1]]; err != nil || !bytes.Equal(b, want) {
			t.Errorf("range %d+%d: read %q, %v; want %q", r[0], r[1], b, err, want)
		}
	}
	for _, r := range [][2]int64{{-1, 1}, {-1, 0}, {0, -1}, {S, -1}, {S + 1, 0}, {1, S}, {0, S + 1}, {S, 1}} {
		if rc, err := OpenLines(ctx, s, m, r[0], r[1]); !errors.Is(err, ErrCorrupt) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("range %d+%d of %d: %v, want ErrCorrupt", r[0], r[1], S, err)
		}
	}
	for _, bad := range []struct {
		m    Meta
		want error
	}{
		{Meta{Name: "L", Digest: d, Size: S}, ErrInvalidName},
		{Meta{Name: "l", Digest: "md5:00", Size: S}, ErrInvalidDigest},
	} {
		if rc, err := OpenLines(ctx, s, bad.m, 0, 1); !errors.Is(err, bad.want) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("OpenLines(%q, %q): %v, want %v", bad.m.Name, bad.m.Digest, err, bad.want)
		}
	}
}

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

// A catalog's poll record and configured mark, which list before its
// content, do not hide that content from GC: old digests still go.
// Catches gcGroup stopping at the first key that is no digest's
// (continue turned into break).
func TestGCSeesContentAfterMarks(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds := gcHistory(t, s, "m", 3)
	if err := MarkConfigured(ctx, s, []string{"m"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := RecordPoll(ctx, s, "m", Poll{Ref: "example.com/c:latest", Digest: ds[2]}); err != nil {
		t.Fatal(err)
	}
	rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 2 || r["m "+ds[0]] != GCOld || r["m "+ds[1]] != GCOld {
		t.Fatalf("deleted %v, want the two old digests", r)
	}
	gcCheckServes(t, s, "m")
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
func TestGCRemovalOrderSurvivesFailure(t *testing.T) {
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

// The index holds line lengths in 32 bits: a line of 2^32-1 bytes loads,
// one of 2^32 bytes is refused rather than read back as length 0.
// Catches maxLine's bound moved (1<<32-1 to 1<<32+1).
func TestIndexLineLengthBound(t *testing.T) {
	for _, n := range []int64{maxLine, maxLine + 1} {
		idx, err := parseIndex(encodeIndex([]string{""}, []object{{n: n}}, n))
		switch {
		case n <= maxLine && (err != nil || int64(idx.entries[0].n) != n):
			t.Errorf("line of %d bytes: %v", n, err)
		case n > maxLine && !errors.Is(err, ErrCorrupt):
			t.Errorf("line of %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
}

// A catalog of one object whose names are long writes and reads back: the
// index's size estimate grows with every string. Catches a string's
// length subtracted from that estimate, which goes below the header and
// panics.
func TestIndexLongNames(t *testing.T) {
	s := newStore(t)
	long := strings.Repeat("n", 300)
	objs := []obj{{"olm.bundle", "p-" + long, "b-" + long, []byte(`{"schema":"olm.bundle"}` + "\n")}}
	writeCatalog(t, s, "long", digestOf("long"), objs)
	publish(t, s, "long", digestOf("long"), gcBase)
	c, err := Open(context.Background(), s, "long")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Query(context.Background(), &b, Query{Name: "b-" + long}); err != nil || b.String() != string(objs[0].line) {
		t.Fatalf("query: %q, %v", b.String(), err)
	}
}

// An index shorter than its header and checksum is refused as corrupt
// without a panic, even with a valid magic, version and checksum; one of
// exactly that length from a later version is refused as a format this
// reader does not know. Catches the length check loosened (indexHeader+4
// to indexHeader-4), which reads past the end, or tightened by one (< to
// <=), which calls the later version's index corrupt.
func TestIndexShortInputs(t *testing.T) {
	header := func(n int, version uint32) []byte {
		b := make([]byte, n)
		copy(b, indexMagic)
		binary.LittleEndian.PutUint32(b[8:], version)
		if n >= 16 {
			binary.LittleEndian.PutUint32(b[12:], 1) // one string
		}
		return binary.LittleEndian.AppendUint32(b[:n-4], crc32.Checksum(b[:n-4], castagnoli))
	}
	for n := 12; n < indexHeader+4; n++ {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("index of %d bytes: panic %v", n, p)
				}
			}()
			if _, err := parseIndex(header(n, indexVersion)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("index of %d bytes: %v, want ErrCorrupt", n, err)
			}
		}()
	}
	if _, err := parseIndex(header(indexHeader+4, indexVersion+1)); !errors.Is(err, ErrFormat) {
		t.Errorf("header-only index of version %d: %v, want ErrFormat", indexVersion+1, err)
	}
}

// GCOptions' zero values mean the defaults, negative ones none, positive
// ones themselves; the unconfigured age is never below the grace period.
// An empty catalog list deletes nothing and says so; no list says nothing.
// Unlike TestGCShort's cases this runs without -short too. Catches any of
// these cases inverted (== 0, > 0, < 0, the list's nil and length tests).
func TestGCOptionsResolve(t *testing.T) {
	const h = time.Hour
	for _, tc := range []struct {
		o                   GCOptions
		grace, unconfigured time.Duration
		keep                int
	}{
		{GCOptions{}, DefaultGrace, DefaultUnconfiguredAge, DefaultKeep},
		{GCOptions{Grace: 3 * h, UnconfiguredAge: 5 * h, Keep: 3}, 3 * h, 5 * h, 3},
		{GCOptions{Grace: 3 * h, UnconfiguredAge: 2 * h, Keep: 1}, 3 * h, 3 * h, 1},
		{GCOptions{Grace: -1, UnconfiguredAge: -1, Keep: -1}, 0, 0, 0},
		{GCOptions{Grace: 30 * time.Minute, UnconfiguredAge: -1}, 30 * time.Minute, 30 * time.Minute, DefaultKeep},
	} {
		r := newGCRun(nil, tc.o)
		if r.grace != tc.grace || r.unconfigured != tc.unconfigured || r.keepNewest != tc.keep {
			t.Errorf("%+v: grace %v, unconfigured %v, keep %d; want %v, %v, %d",
				tc.o, r.grace, r.unconfigured, r.keepNewest, tc.grace, tc.unconfigured, tc.keep)
		}
	}
	for _, tc := range []struct {
		list     []string
		set      map[string]bool
		problems int
	}{
		{nil, nil, 0},
		{[]string{}, nil, 1},
		{[]string{"a", "b"}, map[string]bool{"a": true, "b": true}, 0},
	} {
		r := newGCRun(nil, GCOptions{Catalogs: tc.list})
		set := r.configured()
		if (set == nil) != (tc.set == nil) || len(set) != len(tc.set) || len(r.rep.Problems) != tc.problems {
			t.Errorf("list %#v: set %v, problems %q; want %v and %d problems", tc.list, set, r.rep.Problems, tc.set, tc.problems)
		}
		for n := range tc.set {
			if !set[n] {
				t.Errorf("list %#v: %s not in the set %v", tc.list, n, set)
			}
		}
	}
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

// A string whose length runs one byte past the end of the index is
// refused as corrupt, without a panic. Catches that bound's check joined
// with && instead of || or computed as len+pos instead of len-pos.
func TestIndexStringPastEnd(t *testing.T) {
	good := sampleIndex(t, fixedObjs())
	all := len(good) - 4 - indexHeader
	const pos = 2 // after the first string's length (0) and the second's
	if good[indexHeader] != 0 || all-pos+1 >= 0x80 {
		t.Fatalf("fixed index not as expected: %d bytes", len(good))
	}
	b := append([]byte(nil), good...)
	b[indexHeader+1] = byte(all - pos + 1)
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v", p)
		}
	}()
	if _, err := parseIndex(reseal(b)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("string past the end: %v, want ErrCorrupt", err)
	}
}

// An index whose string table holds a name twice is refused: a query
// finds one id by binary search and would miss the objects of the other.
// Catches the strictly-ascending check relaxed (>= to >).
func TestIndexDuplicateString(t *testing.T) {
	b := encodeIndex([]string{"", "etcd", "etcd"}, []object{{name: 1, n: 1}, {name: 2, n: 1}}, 2)
	if _, err := parseIndex(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("duplicate string: %v, want ErrCorrupt", err)
	}
}

// An index whose only string is not "" is refused: id 0 must mean "none",
// and with one string no later one shows the table is wrong. Catches the
// first-string check made at i != 0 instead of i == 0.
func TestIndexSingleStringNotEmpty(t *testing.T) {
	b := encodeIndex([]string{"etcd"}, []object{{n: 1}}, 1)
	if _, err := parseIndex(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("only string %q: %v, want ErrCorrupt", "etcd", err)
	}
}

// An object whose schema, package or name id is one past the string
// table is refused, each field on its own, before a query indexes the
// table with it. Catches any of the three bounds moved by one (>= to >)
// and the object checks joined with && instead of ||.
func TestIndexIDOutOfRange(t *testing.T) {
	good := encodeIndex([]string{"", "a"}, []object{{schema: 1, pkg: 1, name: 1, n: 1}}, 1)
	const obj = indexHeader + 3 // after "" (1 byte) and "a" (2 bytes)
	if !bytes.Equal(good[obj:obj+4], []byte{1, 1, 1, 1}) {
		t.Fatalf("unexpected layout % x", good)
	}
	if _, err := parseIndex(good); err != nil {
		t.Fatal(err)
	}
	for f, field := range []string{"schema", "package", "name"} {
		b := append([]byte(nil), good...)
		b[obj+f] = 2 // the number of strings
		if _, err := parseIndex(reseal(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s id past the strings: %v, want ErrCorrupt", field, err)
		}
	}
}

// uvarintString decodes as binary.Uvarint does at every edge: a varint
// cut short, the largest value (ten bytes, the last 1), and an overflow
// (the tenth byte above 1) are told apart from values, and an eleventh
// byte is never read. Catches the ten-byte limit moved (< to <=), the
// tenth byte's bound moved or inverted, the overflow check placed at an
// unreachable byte (MaxVarintLen64-1 to +1), and an overflow reported as
// success (-(i+1) to +(i+1)).
func TestUvarintStringEdges(t *testing.T) {
	ff9 := strings.Repeat("\xff", 9)
	for _, s := range []string{"", "\x00", "\x7f", "\x80", "\x80\x80", "\x80\x01", ff9, ff9 + "\x00", ff9 + "\x01", ff9 + "\x02", ff9 + "\x7f",
		strings.Repeat("\x80", 9) + "\x01", strings.Repeat("\x80", 10) + "\x00"} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("% x: panic %v", s, p)
				}
			}()
			v, n := uvarintString(s)
			wv, wn := binary.Uvarint([]byte(s))
			if (n > 0) != (wn > 0) || n > 0 && (v != wv || n != wn) {
				t.Errorf("% x: %d, %d; binary.Uvarint %d, %d", s, v, n, wv, wn)
			}
		}()
	}
}

// PointerKey names the object Publish swaps, so a reader's cheap Stat of
// it sees each publish as a new ETag. Covers PointerKey, which no other
// test of this package calls.
func TestPointerKeyIsPublished(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var etags []string
	for i := range 2 {
		d := digestOf(i)
		gcContent(t, s, "p", d, gcBase, 2)
		publish(t, s, "p", d, gcBase)
		in, err := s.Stat(ctx, PointerKey("p"))
		if err != nil {
			t.Fatalf("Stat(PointerKey): %v", err)
		}
		etags = append(etags, in.ETag)
	}
	if etags[0] == etags[1] {
		t.Fatalf("ETag %q unchanged by a publish", etags[0])
	}
}

// The GraphQL shape stored at Commit reads back equal to the one
// rediscovered from the lines; meta without one is ErrNoGraphQL, and a
// stored shape missing or of another size than meta says is ErrCorrupt.
// Catches each check of GraphQLShape and DiscoverGraphQL inverted or
// moved by one, and the shape's key computed wrongly.
func TestGraphQLShapeStoredAndDiscovered(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var objs []obj
	for seed := uint64(1); len(objs) < 30; seed++ {
		objs = genCatalog(rand.New(rand.NewPCG(seed, 7)), 6)
	}
	d := digestOf("gql")
	writeCatalog(t, s, "g", d, objs)
	publish(t, s, "g", d, gcBase)
	c, err := Open(ctx, s, "g")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := c.GraphQLShape(ctx)
	if err != nil {
		t.Fatalf("GraphQLShape: %v", err)
	}
	found, err := c.DiscoverGraphQL(ctx)
	if err != nil {
		t.Fatalf("DiscoverGraphQL: %v", err)
	}
	a, _ := stored.Marshal()
	b, _ := found.Marshal()
	if !bytes.Equal(a, b) || len(a) < 10 {
		t.Fatalf("stored shape %s, discovered %s", a, b)
	}
	size := c.Meta.GraphQLSize
	for _, tc := range []struct {
		size int64
		want error
	}{{0, ErrNoGraphQL}, {-1, ErrNoGraphQL}, {size - 1, ErrCorrupt}, {size + 1, ErrCorrupt}} {
		c.Meta.GraphQLSize = tc.size
		if _, err := c.GraphQLShape(ctx); !errors.Is(err, tc.want) {
			t.Errorf("GraphQLSize %d of %d: %v, want %v", tc.size, size, err, tc.want)
		}
	}
	c.Meta.GraphQLSize = size
	if err := s.Delete(ctx, contentPrefix("g", d)+graphqlFile); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GraphQLShape(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("shape deleted: %v, want ErrCorrupt", err)
	}
	// Lines longer than the reader's first buffer are observed whole.
	big := []obj{{"olm.bundle", "p", "big", []byte(`{"schema":"olm.bundle","pad":"` + strings.Repeat("x", 70<<10) + `","late":1}` + "\n")}}
	writeCatalog(t, s, "big", d, big)
	publish(t, s, "big", d, gcBase)
	if c, err = Open(ctx, s, "big"); err != nil {
		t.Fatal(err)
	}
	found, err = c.DiscoverGraphQL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ = c.GraphQLShape(ctx)
	a, _ = stored.Marshal()
	b, _ = found.Marshal()
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte("late")) {
		t.Fatalf("long line: stored %s, discovered %s", a, b)
	}
}

// Lines pages through the matches of a query in catalog order: offset
// skips, limit bounds (MaxLines at most, 0 none, negatives as 0), and
// matches far apart are read separately. Catches the paging, candidate
// and grouping checks of Lines, page and candidates inverted or moved.
func TestLinesPaging(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var objs []obj
	for seed := uint64(1); len(objs) < 60; seed++ { // a catalog of some size
		objs = genCatalog(rand.New(rand.NewPCG(seed, 9)), 12)
	}
	// Far-apart matches: a big object between two "far" ones.
	objs = append(objs,
		obj{"far", "fp", "f1", []byte(`{"f":1}` + "\n")},
		obj{"pad", "", "", []byte(`{"pad":"` + strings.Repeat("y", 80<<10) + `"}` + "\n")},
		obj{"far", "fp", "f2", []byte(`{"f":2}` + "\n")})
	d := digestOf("lines")
	writeCatalog(t, s, "ln", d, objs)
	publish(t, s, "ln", d, gcBase)
	c, err := Open(ctx, s, "ln")
	if err != nil {
		t.Fatal(err)
	}
	want := func(q Query, off, limit int) [][]byte {
		var out [][]byte
		for _, o := range objs {
			if o.matches(q) {
				out = append(out, o.line)
			}
		}
		off = min(max(off, 0), len(out))
		out = out[off:]
		return out[:min(len(out), max(limit, 0), MaxLines)]
	}
	queries := []Query{{}, {Schema: "olm.bundle"}, {Package: "pkg-1"}, {Name: "n1"}, {Schema: "olm.channel", Name: "n2"},
		{Schema: "olm.bundle", Package: "pkg-2", Name: "n3"}, {Schema: "far"}, {Package: "fp", Name: "f2"}, {Name: "nothing"},
		{Name: "n0-"}, {Package: "pkg-0-"}, {Schema: "olm.bundla"}} // unknown, each sorting just before a known one
	for _, sc := range []string{"", "olm.bundle", "olm.channel", "custom.thing"} {
		for _, pk := range []string{"", "pkg-1", "pkg-2"} {
			for _, nm := range []string{"", "n1", "n4"} {
				queries = append(queries, Query{Schema: sc, Package: pk, Name: nm})
			}
		}
	}
	for _, q := range queries {
		for _, pg := range [][2]int{{0, 1000}, {0, 1}, {1, 2}, {2, 1000}, {-1, 3}, {0, 0}, {0, -1}, {1 << 20, 5}} {
			got, err := c.Lines(ctx, q, pg[0], pg[1])
			if err != nil {
				t.Fatal(err)
			}
			if w := want(q, pg[0], pg[1]); len(got) != len(w) || len(w) > 0 && !bytes.Equal(bytes.Join(got, nil), bytes.Join(w, nil)) {
				t.Errorf("%+v offset %d limit %d: %d lines, want %d", q, pg[0], pg[1], len(got), len(w))
			}
		}
	}
	many := make([]obj, MaxLines+5)
	for i := range many {
		many[i] = obj{"olm.bundle", "p", fmt.Sprint("b", i), fmt.Appendf(nil, `{"i":%d}`+"\n", i)}
	}
	writeCatalog(t, s, "many", d, many)
	publish(t, s, "many", d, gcBase)
	if c, err = Open(ctx, s, "many"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Lines(ctx, Query{Package: "p"}, 3, MaxLines+5); err != nil || len(got) != MaxLines || !bytes.Equal(got[0], many[3].line) {
		t.Fatalf("over MaxLines: %d lines, %v", len(got), err)
	}
}

// TakeTurn gives the named job to the first replica asking, for slightly
// less than the interval, and to no one else within it; a bad name or
// interval is refused, a corrupt record replaced. Catches TakeTurn's
// checks inverted, its key, and the interval's shortening computed wrongly.
func TestTakeTurnInterval(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := LeaseHolder{Replica: "a", Instance: "a1"}
	b := LeaseHolder{Replica: "b", Instance: "b1"}
	for _, every := range []time.Duration{0, -time.Second} {
		if _, _, err := TakeTurn(ctx, s, "gc", a, every); !errors.Is(err, ErrInvalidTurn) {
			t.Errorf("interval %v: %v", every, err)
		}
	}
	if _, _, err := TakeTurn(ctx, s, "Bad/Name", a, time.Hour); !errors.Is(err, ErrInvalidTurn) {
		t.Errorf("bad name: %v", err)
	}
	before := time.Now()
	ok, rec, err := TakeTurn(ctx, s, "gc", a, 100*time.Second)
	if err != nil || !ok || rec.Replica != "a" {
		t.Fatalf("first: %v %+v %v", ok, rec, err)
	}
	if lo, hi := before.Add(95*time.Second), time.Now().Add(95*time.Second); rec.Expires.Before(lo) || rec.Expires.After(hi) {
		t.Errorf("expires %v, want 95s after the take", rec.Expires)
	}
	if _, err := s.Stat(ctx, TurnKey("gc")); err != nil || TurnKey("gc") != "leases/gc" {
		t.Errorf("TurnKey %q: %v", TurnKey("gc"), err)
	}
	ok, rec, err = TakeTurn(ctx, s, "gc", b, 100*time.Second)
	if err != nil || ok || rec.Replica != "a" {
		t.Fatalf("second within the interval: %v %+v %v", ok, rec, err)
	}
	if _, err := s.Put(ctx, TurnKey("poll"), strings.NewReader("{garbage")); err != nil {
		t.Fatal(err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", b, time.Minute); err != nil || !ok || rec.Replica != "b" {
		t.Fatalf("over a corrupt record: %v %+v %v", ok, rec, err)
	}
}

// getCounter counts the ranged Gets of keys ending in catalog.jsonl.
type getCounter struct {
	storage.Store
	mu   sync.Mutex
	gets int
}

func (g *getCounter) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if strings.HasSuffix(key, "/"+contentFile) {
		g.mu.Lock()
		g.gets++
		g.mu.Unlock()
	}
	return g.Store.Get(ctx, key, off, n)
}

// Lines reads matches at most 64 KB apart with one Get (a round trip on
// object storage), long adjacent lines included, and farther ones apart.
// Catches the gap between matches computed wrongly or compared with < or
// > instead of <=.
func TestLinesGroupsCloseMatches(t *testing.T) {
	ctx := context.Background()
	line := func(fill string, n int) []byte { // n bytes with the newline
		return []byte(`{"p":"` + strings.Repeat(fill, n-9) + `"}` + "\n")
	}
	const gap = 64 << 10
	for _, tc := range []struct {
		pad  int
		gets int
	}{{gap, 1}, {gap + 1, 2}} {
		s := newStore(t)
		objs := []obj{{"a", "", "a1", line("x", 40<<10)}, {"a", "", "a2", line("x", 40<<10)},
			{"pad", "", "", line("y", tc.pad)}, {"a", "", "a3", line("z", 20)}}
		writeCatalog(t, s, "gap", digestOf("gap"), objs)
		publish(t, s, "gap", digestOf("gap"), gcBase)
		gc := &getCounter{Store: s}
		c, err := Open(ctx, gc, "gap")
		if err != nil {
			t.Fatal(err)
		}
		gc.gets = 0
		got, err := c.Lines(ctx, Query{Schema: "a"}, 0, 10)
		if err != nil || len(got) != 3 || !bytes.Equal(got[2], objs[3].line) || !bytes.Equal(got[1], objs[1].line) {
			t.Fatalf("gap %d: %d lines, %v", tc.pad, len(got), err)
		}
		if gc.gets != tc.gets {
			t.Errorf("matches %d bytes apart: %d Gets, want %d", tc.pad, gc.gets, tc.gets)
		}
	}
}
