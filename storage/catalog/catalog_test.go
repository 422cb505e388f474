package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/storagetest"
)

func readAll(t *testing.T, c *Catalog) []byte {
	t.Helper()
	rc, err := c.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// queries returns every combination of the values used in objs, plus ""
// and values that match nothing.
func queries(objs []obj) []Query {
	vals := func(f func(obj) string) []string {
		set := map[string]bool{"": true, "absent": true}
		for _, o := range objs {
			set[f(o)] = true
		}
		out := make([]string, 0, len(set))
		for v := range set {
			out = append(out, v)
		}
		sort.Strings(out)
		return out
	}
	var qs []Query
	for _, s := range vals(func(o obj) string { return o.schema }) {
		for _, p := range vals(func(o obj) string { return o.pkg }) {
			for _, n := range vals(func(o obj) string { return o.name }) {
				qs = append(qs, Query{s, p, n})
			}
		}
	}
	return qs
}

// firstSeparation returns the bytes between the first two matches of a
// query that are not adjacent.
func firstSeparation(objs []obj) int64 {
	for _, q := range queries(objs) {
		var off int64
		lastEnd := int64(-1)
		for _, o := range objs {
			if o.matches(q) {
				if lastEnd >= 0 && off > lastEnd {
					return off - lastEnd
				}
				lastEnd = off + int64(len(o.line))
			}
			off += int64(len(o.line))
		}
	}
	return 0
}

// The property: for random catalogs, All is the concatenation of the lines
// and every Query is the catalog-order filter of them, whatever ReadGap.
func TestRoundTripProperty(t *testing.T) {
	iterations := 40
	if testing.Short() {
		iterations = 8
	}
	s := newStore(t)
	ctx := context.Background()
	total, queried := 0, 0
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 99))
		objs := genCatalog(r, 1+it%12)
		total += len(objs)
		name := fmt.Sprintf("cat-%d", it%5)
		digest := digestOf(it)
		m := writeCatalog(t, s, name, digest, objs)
		publish(t, s, name, digest, time.Now())
		c, err := Open(ctx, s, name)
		if err != nil {
			t.Fatalf("iteration %d: Open: %v", it, err)
		}
		c.ReadGap = []int64{0, 0, 1, 200, 5000}[it%5]
		all := concat(objs, Query{})
		if got := readAll(t, c); !bytes.Equal(got, all) {
			t.Fatalf("iteration %d: All differs (%d bytes, want %d)", it, len(got), len(all))
		}
		if m.Objects != len(objs) || m.Size != int64(len(all)) || c.Meta.SHA256 != m.SHA256 || c.Pointer.Digest != digest {
			t.Fatalf("iteration %d: meta %+v, pointer %+v", it, c.Meta, c.Pointer)
		}
		for _, q := range queries(objs) {
			want := concat(objs, q)
			var got bytes.Buffer
			if err := c.Query(ctx, &got, q); err != nil {
				t.Fatalf("iteration %d: Query(%+v): %v", it, q, err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("iteration %d (ReadGap %d): Query(%+v) = %d bytes, want %d:\n%s\nwant:\n%s",
					it, c.ReadGap, q, got.Len(), len(want), got.Bytes(), want)
			}
			n, size := c.Count(q)
			if size != int64(len(want)) || n != bytes.Count(want, []byte("\n")) {
				t.Fatalf("iteration %d: Count(%+v) = %d, %d; want %d bytes", it, q, n, size, len(want))
			}
			queried++
		}
	}
	// Guard against the generator degenerating into trivial catalogs.
	if total < 10*iterations || queried < 100*iterations {
		t.Fatalf("only %d objects, %d queries over %d catalogs", total, queried, iterations)
	}
	t.Logf("%d objects in %d catalogs, %d queries", total, iterations, queried)
}

func TestMeta(t *testing.T) {
	s := newStore(t)
	objs := []obj{
		{"olm.package", "", "a", []byte(`{"schema":"olm.package","name":"a"}` + "\n")},
		{"olm.channel", "a", "stable", []byte(`{"schema":"olm.channel","package":"a","name":"stable"}` + "\n")},
		{"olm.bundle", "a", "a.v1", []byte(`{"schema":"olm.bundle","package":"a","name":"a.v1"}` + "\n")},
		{"olm.bundle", "a", "a.v2", []byte(`{"schema":"olm.bundle","package":"a","name":"a.v2"}` + "\n")},
	}
	created := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	ctx := context.Background()
	w, err := NewWriter(ctx, s, "ops", digestOf(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Commit(ctx, Meta{Ref: "r:1", Created: created, Stats: map[string]any{"pullSeconds": 2.5}, VerifiedBy: "keyless identity a@b.example issuer https://i.example"})
	if err != nil {
		t.Fatal(err)
	}
	all := concat(objs, Query{})
	sum := sha256Hex(all)
	want := Meta{
		Format: 1, Name: "ops", Digest: digestOf(1), Ref: "r:1", Objects: 4, Size: int64(len(all)), SHA256: sum,
		IndexSize: int64(len(sampleIndex(t, objs))), GraphQLSize: m.GraphQLSize,
		Schemas:    map[string]int{"olm.package": 1, "olm.channel": 1, "olm.bundle": 2},
		Created:    created,
		Stats:      map[string]any{"pullSeconds": 2.5},
		VerifiedBy: "keyless identity a@b.example issuer https://i.example",
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("Commit meta = %+v\nwant %+v", m, want)
	}
	got, ok, err := HasContent(ctx, s, "ops", digestOf(1))
	if err != nil || !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HasContent = %+v, %v, %v", got, ok, err)
	}
	// The stored JSON uses the documented field names.
	rc, err := s.Get(ctx, "catalogs/ops/"+strings.Replace(digestOf(1), ":", "-", 1)+"/meta.json", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"format", "name", "digest", "ref", "objects", "size", "sha256", "indexSize", "schemas", "created", "stats", "verifiedBy"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("meta.json lacks %q: %s", f, raw)
		}
	}
	// A meta.json written before verifiedBy existed is still read.
	delete(fields, "verifiedBy")
	old, _ := json.Marshal(fields)
	if _, err := s.Put(ctx, "catalogs/ops/"+strings.Replace(digestOf(1), ":", "-", 1)+"/meta.json", bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	want.VerifiedBy = ""
	if got, ok, err := HasContent(ctx, s, "ops", digestOf(1)); err != nil || !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("older meta.json: HasContent = %+v, %v, %v", got, ok, err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestLayout(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	d := digestOf("layout")
	writeCatalog(t, s, "my.catalog-1", d, []obj{{"olm.package", "", "p", []byte("{}\n")}})
	at := time.Date(2025, 6, 1, 0, 0, 0, 123456789, time.UTC)
	publish(t, s, "my.catalog-1", d, at)
	if err := RecordPoll(ctx, s, "my.catalog-1", Poll{Ref: "r", Digest: d}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, in := range list {
		keys = append(keys, in.Key)
	}
	dir := "catalogs/my.catalog-1/sha256-" + strings.TrimPrefix(d, "sha256:") + "/"
	want := []string{
		"catalogs/my.catalog-1/current", "catalogs/my.catalog-1/lastpoll",
		dir + "catalog.jsonl", dir + "graphql-schema.json", dir + "index", dir + "meta.json",
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys = %q\nwant %q", keys, want)
	}
	rc, _ := s.Get(ctx, "catalogs/my.catalog-1/current", 0, -1)
	raw, _ := io.ReadAll(rc)
	rc.Close()
	var fields map[string]string
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["digest"] != d || fields["ref"] != "example.com/catalog:latest" ||
		fields["resolvedRef"] != "example.com/catalog@"+d || fields["resolvedAt"] != "2025-06-01T00:00:00.123456789Z" ||
		fields["publishedAt"] == "" {
		t.Errorf("current = %s", raw)
	}
	if k, err := ContentKey("my.catalog-1", d); err != nil || k != dir+"catalog.jsonl" {
		t.Errorf("ContentKey = %q, %v", k, err)
	}
}

// Open reads the pointer, meta and index, never catalog.jsonl; a Query
// reads exactly the matching bytes, one Get per run of adjacent matches.
func TestQueryReadsOnlyMatches(t *testing.T) {
	base := newStore(t)
	r := rand.New(rand.NewPCG(7, 7))
	// Every schema×package×name query runs at three gaps: 100k Queries on
	// the full-size catalog, about 2k on the -short one.
	maxPkgs := 60
	if testing.Short() {
		maxPkgs = 12
	}
	objs := genCatalog(r, maxPkgs)
	d := digestOf("reads")
	m := writeCatalog(t, base, "reads", d, objs)
	publish(t, base, "reads", d, time.Now())
	s := storagetest.NewCounting(base)
	ctx := context.Background()
	c, err := Open(ctx, s, "reads")
	if err != nil {
		t.Fatal(err)
	}
	prefix := "catalogs/reads/sha256-" + strings.TrimPrefix(d, "sha256:") + "/"
	content := prefix + "catalog.jsonl"
	if _, gets, bytes := s.Snapshot(); gets[content] != 0 || bytes[content] != 0 {
		t.Errorf("Open read catalog.jsonl: %d Gets, %d bytes", gets[content], bytes[content])
	}
	_, opened, _ := s.Snapshot()
	for k := range opened {
		if k != prefix+"index" && k != prefix+"meta.json" && k != "catalogs/reads/current" {
			t.Errorf("Open read %q", k)
		}
	}
	// The last gap is exactly one separation between two matches, so the
	// bound is checked at its edge whatever the catalog's size.
	for _, gap := range []int64{0, 100, 1000, firstSeparation(objs)} {
		c.ReadGap = gap
		for _, q := range queries(objs) {
			// Expected fetches, from the object list alone: runs of
			// matches whose separating bytes are within the gap.
			var fetches int
			var readBytes, off, lastEnd int64
			lastEnd = -1
			for _, o := range objs {
				n := int64(len(o.line))
				if o.matches(q) {
					if lastEnd >= 0 && off-lastEnd <= gap {
						readBytes += off - lastEnd + n
					} else {
						fetches++
						readBytes += n
					}
					lastEnd = off + n
				}
				off += n
			}
			s.Reset()
			var out bytes.Buffer
			if err := c.Query(ctx, &out, q); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), concat(objs, q)) {
				t.Fatalf("Query(%+v) output differs", q)
			}
			_, gets, bytes := s.Snapshot()
			if gets[content] != fetches || bytes[content] != readBytes || len(gets) > min(fetches, 1) {
				t.Fatalf("ReadGap %d, Query(%+v): %d Gets of %d bytes (all keys %v), want %d Gets of %d bytes",
					gap, q, gets[content], bytes[content], gets, fetches, readBytes)
			}
			if gap == 0 && readBytes != int64(out.Len()) {
				t.Fatalf("ReadGap 0 read %d bytes for %d of output", readBytes, out.Len())
			}
		}
	}
	if m.Objects == 0 {
		t.Fatal("empty test catalog")
	}
}

func TestEmptyCatalog(t *testing.T) {
	s := newStore(t)
	d := digestOf("empty")
	m := writeCatalog(t, s, "empty", d, nil)
	if m.Objects != 0 || m.Size != 0 || m.SHA256 != sha256Hex(nil) {
		t.Errorf("meta %+v", m)
	}
	publish(t, s, "empty", d, time.Now())
	c, err := Open(context.Background(), s, "empty")
	if err != nil {
		t.Fatal(err)
	}
	if b := readAll(t, c); len(b) != 0 {
		t.Errorf("All = %q", b)
	}
	var out bytes.Buffer
	if err := c.Query(context.Background(), &out, Query{Schema: "olm.package"}); err != nil || out.Len() != 0 {
		t.Errorf("Query = %q, %v", out.Bytes(), err)
	}
}

func TestAbortKeepsPrevious(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	old := genCatalog(rand.New(rand.NewPCG(1, 1)), 5)
	dOld, dNew := digestOf("old"), digestOf("new")
	writeCatalog(t, s, "ab", dOld, old)
	publish(t, s, "ab", dOld, time.Now())

	w, err := NewWriter(ctx, s, "ab", dNew)
	if err != nil {
		t.Fatal(err)
	}
	// Several MB, so the upload is in flight when aborted.
	line := []byte(`{"schema":"olm.bundle","pad":"` + strings.Repeat("y", 64<<10) + `"}` + "\n")
	for range 100 {
		if err := w.Add("olm.bundle", "p", "b", line); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	w.Abort() // idempotent
	if err := w.Add("olm.bundle", "p", "b", line); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Abort = %v, want ErrClosed", err)
	}
	if _, err := w.Commit(ctx, Meta{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Abort = %v, want ErrClosed", err)
	}
	if _, ok, err := HasContent(ctx, s, "ab", dNew); ok || err != nil {
		t.Errorf("aborted content complete: %v, %v", ok, err)
	}
	list, err := s.List(ctx, "catalogs/ab/sha256-"+strings.TrimPrefix(dNew, "sha256:"))
	if err != nil || len(list) != 0 {
		t.Errorf("aborted writer left %v, %v", list, err)
	}
	if err := Publish(ctx, s, "ab", Pointer{Digest: dNew, ResolvedAt: time.Now()}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Publish of aborted content = %v, want ErrIncomplete", err)
	}
	c, err := Open(ctx, s, "ab")
	if err != nil {
		t.Fatal(err)
	}
	if c.Pointer.Digest != dOld || !bytes.Equal(readAll(t, c), concat(old, Query{})) {
		t.Errorf("Open after Abort: %+v", c.Pointer)
	}
	if _, err := OpenDigest(ctx, s, "ab", dNew); !errors.Is(err, ErrIncomplete) {
		t.Errorf("OpenDigest of aborted content = %v, want ErrIncomplete", err)
	}
}

// A failing store, at any step, leaves the content incomplete.
func TestCommitFailures(t *testing.T) {
	ctx := context.Background()
	line := []byte(`{"pad":"` + strings.Repeat("z", 1000) + `"}` + "\n")
	for _, tc := range []struct {
		suffix    string
		failAfter int64
	}{
		{"/catalog.jsonl", 0},
		{"/catalog.jsonl", 300_000},
		{"/index", 0},
		{"/meta.json", 0},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.suffix, tc.failAfter), func(t *testing.T) {
			base := newStore(t)
			s := &faultyStore{Store: base, suffix: tc.suffix, failAfter: tc.failAfter}
			w, err := NewWriter(ctx, s, "f", digestOf(1))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			var addErr error
			for range 1000 {
				if addErr = w.Add("s", "p", "n", line); addErr != nil {
					break
				}
			}
			_, err = w.Commit(ctx, Meta{})
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			if tc.suffix == "/catalog.jsonl" && !errors.Is(err, errInjected) && !errors.Is(addErr, errInjected) {
				t.Errorf("errors do not carry the store's: Add %v, Commit %v", addErr, err)
			}
			if _, ok, err := HasContent(ctx, base, "f", digestOf(1)); ok || err != nil {
				t.Errorf("HasContent after failure = %v, %v", ok, err)
			}
		})
	}
}

// Cancelling the writer's context fails it.
func TestWriterContextCancel(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWriter(ctx, s, "cc", digestOf(1))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("q", 100_000) + "\n")
	w.Add("s", "p", "n", line)
	cancel()
	for range 100 {
		if w.Add("s", "p", "n", line) != nil {
			break
		}
	}
	if _, err := w.Commit(context.Background(), Meta{}); err == nil {
		t.Error("Commit after cancel succeeded")
	}
	if _, ok, _ := HasContent(context.Background(), s, "cc", digestOf(1)); ok {
		t.Error("cancelled content complete")
	}
}

func TestAddRejectsBadLines(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w, err := NewWriter(ctx, s, "lines", digestOf(1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, l := range []string{"", "no newline", "two\nlines\n", "\n\n", "trailing\nafter"} {
		if err := w.Add("s", "p", "n", []byte(l)); !errors.Is(err, ErrInvalidLine) {
			t.Errorf("Add(%q) = %v, want ErrInvalidLine", l, err)
		}
	}
	// Rejected lines are not written; the writer stays usable.
	if err := w.Add("s", "p", "n", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("s", "", "", []byte("\n")); err != nil {
		t.Fatal(err)
	}
	m, err := w.Commit(ctx, Meta{})
	if err != nil || m.Objects != 2 || m.Size != 4 {
		t.Fatalf("Commit = %+v, %v", m, err)
	}
	if _, err := w.Commit(ctx, Meta{}); !errors.Is(err, ErrClosed) {
		t.Errorf("second Commit = %v, want ErrClosed", err)
	}
}

func TestPublish(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a, b := digestOf("a"), digestOf("b")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := Publish(ctx, s, "p", Pointer{Digest: a, ResolvedAt: t0}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Publish without content = %v, want ErrIncomplete", err)
	}
	if _, _, err := Current(ctx, s, "p"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Current before publish = %v, want ErrNotExist", err)
	}
	if _, err := Open(ctx, s, "p"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Open before publish = %v, want ErrNotExist", err)
	}
	writeCatalog(t, s, "p", a, []obj{{"s", "", "a", []byte("a\n")}})
	writeCatalog(t, s, "p", b, []obj{{"s", "", "b", []byte("b\n")}})
	if err := Publish(ctx, s, "p", Pointer{Digest: a}); !errors.Is(err, ErrInvalidPointer) {
		t.Errorf("Publish without ResolvedAt = %v, want ErrInvalidPointer", err)
	}
	if err := Publish(ctx, s, "p", Pointer{Digest: a, Ref: "r", ResolvedAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p1, e1, err := Current(ctx, s, "p")
	if err != nil || p1.Digest != a || p1.PublishedAt.IsZero() || !p1.ResolvedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Current = %+v, %v", p1, err)
	}
	// Same digest and ref: a no-op, even with a later resolution.
	if err := Publish(ctx, s, "p", Pointer{Digest: a, Ref: "r", ResolvedAt: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, e, _ := Current(ctx, s, "p"); e != e1 {
		t.Error("republishing the current digest rewrote the pointer")
	}
	// Older resolution: refused.
	if err := Publish(ctx, s, "p", Pointer{Digest: b, Ref: "r", ResolvedAt: t0}); !errors.Is(err, ErrStale) {
		t.Errorf("Publish of older resolution = %v, want ErrStale", err)
	}
	if p, _, _ := Current(ctx, s, "p"); p.Digest != a {
		t.Errorf("stale publish changed pointer to %s", p.Digest)
	}
	// Equal resolution time is not older: accepted.
	if err := Publish(ctx, s, "p", Pointer{Digest: b, Ref: "r", ResolvedAt: t0.Add(time.Hour)}); err != nil {
		t.Errorf("Publish at equal resolvedAt: %v", err)
	}
	// Same digest, new ref: updated.
	if err := Publish(ctx, s, "p", Pointer{Digest: b, Ref: "r2", ResolvedAt: t0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p, _, _ := Current(ctx, s, "p")
	if p.Digest != b || p.Ref != "r2" {
		t.Errorf("Current = %+v", p)
	}
	c, err := Open(ctx, s, "p")
	if err != nil || c.Pointer.Digest != b || string(readAll(t, c)) != "b\n" {
		t.Errorf("Open = %+v, %v", c, err)
	}
	// A corrupt pointer reads as ErrCorrupt and is replaced by Publish.
	if _, err := s.Put(ctx, "catalogs/p/current", strings.NewReader("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Current(ctx, s, "p"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Current of garbage = %v, want ErrCorrupt", err)
	}
	if err := Publish(ctx, s, "p", Pointer{Digest: a, ResolvedAt: t0}); err != nil {
		t.Errorf("Publish over garbage: %v", err)
	}
	if p, _, err := Current(ctx, s, "p"); err != nil || p.Digest != a {
		t.Errorf("Current = %+v, %v", p, err)
	}
}

// A verification found after the content was published is recorded on the
// pointer, which keeps its publish time; publishing without one again does
// not erase it.
func TestPublishRecordsLaterVerification(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a := digestOf("a")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	writeCatalog(t, s, "p", a, []obj{{"s", "", "a", []byte("a\n")}})
	if err := Publish(ctx, s, "p", Pointer{Digest: a, Ref: "r", ResolvedAt: t0, PublishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(ctx, s, "p", Pointer{Digest: a, Ref: "r", ResolvedAt: t0.Add(time.Hour), VerifiedBy: "key k"}); err != nil {
		t.Fatal(err)
	}
	p, e1, err := Current(ctx, s, "p")
	if err != nil || p.VerifiedBy != "key k" || !p.PublishedAt.Equal(t0) || !p.ResolvedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after the verification: %+v, %v; want verified by key k, published at %s", p, err, t0)
	}
	for _, by := range []string{"", "key k"} {
		if err := Publish(ctx, s, "p", Pointer{Digest: a, Ref: "r", ResolvedAt: t0.Add(2 * time.Hour), VerifiedBy: by}); err != nil {
			t.Fatal(err)
		}
		if p, e, _ := Current(ctx, s, "p"); e != e1 || p.VerifiedBy != "key k" {
			t.Errorf("publishing again verified by %q rewrote the pointer: %+v", by, p)
		}
	}
}

// Concurrent publishers of different resolutions converge on the newest,
// whatever order they run in; the others get ErrStale or succeed first.
func TestPublishRace(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const n = 8
	digests := make([]string, n)
	for i := range digests {
		digests[i] = digestOf(i)
		writeCatalog(t, s, "race", digests[i], []obj{{"s", "", "x", fmt.Appendf(nil, "%d\n", i)}})
	}
	base := time.Now()
	for round := range 5 {
		r := rand.New(rand.NewPCG(uint64(round), 3))
		at := r.Perm(n) // publisher i resolved at base + at[i] + round*n
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = Publish(ctx, s, "race", Pointer{
					Digest: digests[i], Ref: fmt.Sprint("round", round),
					ResolvedAt: base.Add(time.Duration(round*n+at[i]) * time.Second),
				})
			})
		}
		close(start)
		wg.Wait()
		newest := slices.Index(at, n-1)
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrStale) {
				t.Errorf("round %d: publisher %d: %v", round, i, err)
			}
		}
		if errs[newest] != nil {
			t.Errorf("round %d: newest publisher failed: %v", round, errs[newest])
		}
		p, _, err := Current(ctx, s, "race")
		if err != nil || p.Digest != digests[newest] {
			t.Errorf("round %d: pointer %s, want newest %s (%v)", round, p.Digest, digests[newest], err)
		}
	}
}

var (
	badNames = []string{
		"", "UPPER", "a/b", "..", ".", "a..b", "-a", "a-", ".a", "a.", "a_b", "a b", "catalogs/../x",
		"a\x00", strings.Repeat("a", 254), "ä", "a/../../etc",
	}
	goodNames  = []string{"a", "0", "my.catalog-1", "a-b.c-d", strings.Repeat("a", 63) + "." + strings.Repeat("b", 189)}
	hex64      = strings.Repeat("ab", 32)
	badDigests = []string{
		"", "sha256:", "sha256:" + hex64[:63], "sha256:" + hex64 + "0", "sha256:" + strings.ToUpper(hex64),
		"sha256-" + hex64, "md5:" + hex64[:32], "sha512:" + hex64, ":" + hex64, "sha256:" + hex64[:62] + "/x",
		"sha256:" + hex64 + "\n", "sha256:../../" + hex64[:58], "SHA256:" + hex64,
	}
)

func TestValidation(t *testing.T) {
	for _, n := range goodNames {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	for _, d := range []string{"sha256:" + hex64, "sha512:" + hex64 + hex64} {
		if !ValidDigest(d) {
			t.Errorf("ValidDigest(%q) = false", d)
		}
	}
	s := newStore(t)
	ctx := context.Background()
	good := digestOf(1)
	for _, n := range badNames {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s(name %q) = %v, want ErrInvalidName", op, n, err)
			}
		}
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
		_, err := NewWriter(ctx, s, n, good)
		check("NewWriter", err)
		_, _, err = HasContent(ctx, s, n, good)
		check("HasContent", err)
		_, _, err = Current(ctx, s, n)
		check("Current", err)
		check("Publish", Publish(ctx, s, n, Pointer{Digest: good, ResolvedAt: time.Now()}))
		check("RecordPoll", RecordPoll(ctx, s, n, Poll{}))
		_, err = LastPoll(ctx, s, n)
		check("LastPoll", err)
		_, err = Open(ctx, s, n)
		check("Open", err)
		_, err = OpenDigest(ctx, s, n, good)
		check("OpenDigest", err)
		_, err = ContentKey(n, good)
		check("ContentKey", err)
	}
	for _, d := range badDigests {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, ErrInvalidDigest) {
				t.Errorf("%s(digest %q) = %v, want ErrInvalidDigest", op, d, err)
			}
		}
		if ValidDigest(d) {
			t.Errorf("ValidDigest(%q) = true", d)
		}
		_, err := NewWriter(ctx, s, "ok", d)
		check("NewWriter", err)
		_, _, err = HasContent(ctx, s, "ok", d)
		check("HasContent", err)
		check("Publish", Publish(ctx, s, "ok", Pointer{Digest: d, ResolvedAt: time.Now()}))
		if d != "" {
			check("RecordPoll", RecordPoll(ctx, s, "ok", Poll{Digest: d}))
		}
		_, err = OpenDigest(ctx, s, "ok", d)
		check("OpenDigest", err)
		_, err = ContentKey("ok", d)
		check("ContentKey", err)
	}
	// Nothing was written by any rejected call.
	if list, err := s.List(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf("store not empty: %v, %v", list, err)
	}
}

func TestPoll(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := LastPoll(ctx, s, "p"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("LastPoll before any = %v, want ErrNotExist", err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	want := Poll{Time: at, Ref: "r:1", Digest: digestOf(1)}
	if err := RecordPoll(ctx, s, "p", want); err != nil {
		t.Fatal(err)
	}
	if got, err := LastPoll(ctx, s, "p"); err != nil || got != want {
		t.Errorf("LastPoll = %+v, %v; want %+v", got, err, want)
	}
	// Failed polls are recorded too, and the zero time becomes now.
	before := time.Now()
	if err := RecordPoll(ctx, s, "p", Poll{Ref: "r:1", Error: "registry down"}); err != nil {
		t.Fatal(err)
	}
	got, err := LastPoll(ctx, s, "p")
	if err != nil || got.Error != "registry down" || got.Digest != "" || got.Time.Before(before) {
		t.Errorf("LastPoll = %+v, %v", got, err)
	}
	rc, _ := s.Get(ctx, "catalogs/p/lastpoll", 0, -1)
	raw, _ := io.ReadAll(rc)
	rc.Close()
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	for _, f := range []string{"time", "ref", "digest"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("lastpoll lacks %q: %s", f, raw)
		}
	}
}

func TestHasContentUnusableMeta(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	d := digestOf(1)
	writeCatalog(t, s, "h", d, []obj{{"s", "", "", []byte("x\n")}})
	key := "catalogs/h/sha256-" + strings.TrimPrefix(d, "sha256:") + "/meta.json"
	for _, content := range []string{
		"{broken",
		`{"format":1,"name":"h","digest":"` + digestOf(2) + `"}`, // another digest's
		`{"format":1,"name":"other","digest":"` + d + `"}`,
		`{"format":99,"name":"h","digest":"` + d + `"}`,
	} {
		if _, err := s.Put(ctx, key, strings.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := HasContent(ctx, s, "h", d); ok || err != nil {
			t.Errorf("HasContent with meta %s = %v, %v", content, ok, err)
		}
		if _, err := OpenDigest(ctx, s, "h", d); err == nil {
			t.Errorf("OpenDigest with meta %s succeeded", content)
		}
	}
}

// An index that disagrees with meta.json, or catalog.jsonl shorter than
// the index, is reported, not served.
func TestOpenInconsistent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	d := digestOf(1)
	var objs []obj
	for seed := uint64(0); len(objs) < 3; seed++ {
		objs = genCatalog(rand.New(rand.NewPCG(seed, 2)), 4)
	}
	writeCatalog(t, s, "i", d, objs)
	prefix := "catalogs/i/sha256-" + strings.TrimPrefix(d, "sha256:") + "/"
	other := digestOf(2)
	writeCatalog(t, s, "i", other, objs[:len(objs)-1])
	rc, _ := s.Get(ctx, "catalogs/i/sha256-"+strings.TrimPrefix(other, "sha256:")+"/index", 0, -1)
	otherIndex, _ := io.ReadAll(rc)
	rc.Close()
	s.Put(ctx, prefix+"index", bytes.NewReader(otherIndex))
	if _, err := OpenDigest(ctx, s, "i", d); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenDigest with mismatched index = %v, want ErrCorrupt", err)
	}
	// meta.json without its index.
	writeCatalog(t, s, "i", d, objs)
	s.Delete(ctx, prefix+"index")
	if _, err := OpenDigest(ctx, s, "i", d); !errors.Is(err, ErrCorrupt) || errors.Is(err, storage.ErrNotExist) {
		t.Errorf("OpenDigest without index = %v, want ErrCorrupt", err)
	}
	// A meta.json that counts one object more than its index.
	m := writeCatalog(t, s, "i", d, objs)
	m.Objects++
	raw, _ := json.Marshal(m)
	s.Put(ctx, prefix+"meta.json", bytes.NewReader(raw))
	if _, err := OpenDigest(ctx, s, "i", d); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenDigest with index disagreeing with meta = %v, want ErrCorrupt", err)
	}
	writeCatalog(t, s, "i", d, objs)
	c, err := OpenDigest(ctx, s, "i", d)
	if err != nil {
		t.Fatal(err)
	}
	all := concat(objs, Query{})
	s.Put(ctx, prefix+"catalog.jsonl", bytes.NewReader(all[:len(all)/2]))
	if err := c.Query(ctx, io.Discard, Query{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Query of truncated catalog.jsonl = %v, want ErrCorrupt", err)
	}
}

// readMeta accepts a meta.json only when it describes this catalog and
// digest with sizes in range; the bounds themselves are in range. A
// meta.json of exactly maxSmall bytes is read whole.
func TestMetaBounds(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	good := Meta{Format: metaFormat, Name: "c", Digest: digest, Size: 0, Objects: 0, IndexSize: indexHeader + 4}
	for _, tc := range []struct {
		name string
		edit func(*Meta)
		ok   bool
	}{
		{"smallest", func(*Meta) {}, true},
		{"largest index", func(m *Meta) { m.IndexSize = maxIndex }, true},
		{"another digest", func(m *Meta) { m.Digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222" }, false},
		{"another catalog", func(m *Meta) { m.Name = "d" }, false},
		{"negative size", func(m *Meta) { m.Size = -1 }, false},
		{"negative objects", func(m *Meta) { m.Objects = -1 }, false},
		{"index too small", func(m *Meta) { m.IndexSize = indexHeader + 3 }, false},
		{"index too large", func(m *Meta) { m.IndexSize = maxIndex + 1 }, false},
	} {
		m := good
		tc.edit(&m)
		b, _ := json.Marshal(m)
		if _, err := st.Put(ctx, contentPrefix("c", digest)+metaFile, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := HasContent(ctx, st, "c", digest); err != nil || ok != tc.ok {
			t.Errorf("%s: complete %v (%v), want %v", tc.name, ok, err, tc.ok)
		}
	}
	b, _ := json.Marshal(good)
	for _, size := range []int{maxSmall, maxSmall + 1} {
		padded := append(bytes.Clone(b), bytes.Repeat([]byte(" "), size-len(b))...)
		if _, err := st.Put(ctx, contentPrefix("c", digest)+metaFile, bytes.NewReader(padded)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := HasContent(ctx, st, "c", digest); err != nil || ok != (size == maxSmall) {
			t.Errorf("meta.json of %d bytes: complete %v (%v)", size, ok, err)
		}
	}
}
