package content

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/storagetest"
)

// interleaved is a catalog whose packages are split into several runs, so
// a package query needs several ranged reads.
func interleaved() []object {
	var objs []object
	for i, pkg := range strings.Split("p q p p r p q q p r", " ") {
		name := fmt.Sprintf("%s.v%d", pkg, i)
		objs = append(objs, object{"olm.bundle", pkg, name, fmt.Appendf(nil, `{"name":%q,"package":%q,"pad":%q,"schema":"olm.bundle"}`+"\n", name, pkg, strings.Repeat("z", 100*i))})
	}
	return objs
}

// runs counts the runs of adjacent objects matching q: the ranged reads
// a query needs.
func runs(objs []object, q catalog.Query) int {
	n, prev := 0, false
	for _, o := range objs {
		m := o.matches(q)
		if m && !prev {
			n++
		}
		prev = m
	}
	return n
}

type reads struct {
	stats, gets map[string]int
	bytes       map[string]int64
}

func wantReads(t *testing.T, step string, cs *storagetest.Counting, want reads) {
	t.Helper()
	stats, gets, bytes := cs.Snapshot()
	if !maps.Equal(stats, want.stats) {
		t.Errorf("%s: Stats %v, want %v", step, stats, want.stats)
	}
	if !maps.Equal(gets, want.gets) {
		t.Errorf("%s: Gets %v, want %v", step, gets, want.gets)
	}
	for k, n := range want.bytes {
		if bytes[k] != n {
			t.Errorf("%s: read %d bytes of %s, want %d", step, bytes[k], k, n)
		}
	}
	cs.Reset()
}

// A cold handler answers a metas query from the pointer, meta.json, the
// index and the matching byte ranges; a warm one from the ranges alone,
// plus one Stat of the pointer once its TTL has passed.
func TestReadsOnlyWhatIsNeeded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs := interleaved()
		m, _ := store(t, s, "cat", "v1", objs)
		content, _ := catalog.ContentKey("cat", m.Digest)
		dir := strings.TrimSuffix(content, "catalog.jsonl")
		ptr, meta, index := catalog.PointerKey("cat"), dir+"meta.json", dir+"index"
		qp, qq := catalog.Query{Package: "p"}, catalog.Query{Schema: "olm.bundle", Package: "q"}
		if runs(objs, qp) != 4 || runs(objs, qq) != 2 {
			t.Fatalf("test catalog: %d and %d runs", runs(objs, qp), runs(objs, qq))
		}

		cs := storagetest.NewCounting(s)
		c := serve(t, New(cs, WithPointerTTL(time.Hour)))
		c.get("/catalogs/cat/api/v1/metas?package=p").ok(t)
		wantReads(t, "cold", cs, reads{
			stats: map[string]int{ptr: 1},
			gets:  map[string]int{ptr: 1, meta: 1, index: 1, content: 4},
			bytes: map[string]int64{content: int64(len(filter(objs, qp))), index: m.IndexSize},
		})
		c.get("/catalogs/cat/api/v1/metas?schema=olm.bundle&package=q", "Accept-Encoding: gzip").ok(t)
		wantReads(t, "warm", cs, reads{
			stats: map[string]int{},
			gets:  map[string]int{content: 2},
			bytes: map[string]int64{content: int64(len(filter(objs, qq)))},
		})
		c.get("/catalogs/cat/api/v1/metas?package=none").ok(t)
		c.do("HEAD", "/catalogs/cat/api/v1/metas?package=p")
		wantReads(t, "warm, nothing to read", cs, reads{stats: map[string]int{}, gets: map[string]int{}})
		c.get("/catalogs/cat/api/v1/all").ok(t)
		wantReads(t, "warm /all", cs, reads{
			stats: map[string]int{},
			gets:  map[string]int{content: 1},
			bytes: map[string]int64{content: m.Size},
		})
		c.get("/catalogs/cat/api/v1/all", "Range: bytes=10-19")
		wantReads(t, "warm range", cs, reads{
			stats: map[string]int{},
			gets:  map[string]int{content: 1},
			bytes: map[string]int64{content: 10},
		})

		cold := serve(t, New(cs))
		cold.do("HEAD", "/catalogs/cat/api/v1/metas?package=p")
		wantReads(t, "cold HEAD", cs, reads{
			stats: map[string]int{ptr: 1},
			gets:  map[string]int{ptr: 1, meta: 1, index: 1},
		})

		every := serve(t, New(cs, WithPointerTTL(0)))
		every.get("/catalogs/cat/api/v1/metas?package=p").ok(t)
		cs.Reset()
		every.get("/catalogs/cat/api/v1/metas?package=p").ok(t)
		// The answer is in the response cache: only the pointer is checked.
		wantReads(t, "warm, TTL 0", cs, reads{
			stats: map[string]int{ptr: 1},
			gets:  map[string]int{},
		})
		// The same content under another ref: a new pointer, the index
		// kept.
		publishPointer(t, s, "cat", catalog.Pointer{Digest: m.Digest, Ref: "example.com/cat:other"})
		every.get("/catalogs/cat/api/v1/metas?package=p").ok(t)
		// Same digest, same cached answer.
		wantReads(t, "republished, TTL 0", cs, reads{
			stats: map[string]int{ptr: 2},
			gets:  map[string]int{ptr: 1},
		})
	})
}

// The cache keeps catalogs within its byte budget, least recently used
// out first.
func TestCacheBudget(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		indexes := map[string]string{}
		var size int64
		for _, name := range []string{"a", "b", "c"} {
			m, _ := store(t, s, name, "v1", versionObjects(name, 10))
			content, _ := catalog.ContentKey(name, m.Digest)
			indexes[name] = strings.TrimSuffix(content, "catalog.jsonl") + "index"
			size = max(size, footprint(&catalog.Catalog{Meta: m}))
		}
		for _, tc := range []struct {
			budget   int64
			requests string
			// opens is how often each catalog's index is read.
			opens map[string]int
		}{
			{10 * size, "a b c a b c", map[string]int{"a": 1, "b": 1, "c": 1}},
			{2*size + size/2, "a b a c a b", map[string]int{"a": 1, "b": 2, "c": 1}},
			{size + size/2, "a a b a", map[string]int{"a": 2, "b": 1}},
			{0, "a a b", map[string]int{"a": 2, "b": 1}},
		} {
			cs := storagetest.NewCounting(s)
			c := serve(t, New(cs, WithCacheSize(tc.budget), WithPointerTTL(time.Hour)))
			for name := range strings.FieldsSeq(tc.requests) {
				c.get("/catalogs/" + name + "/api/v1/metas?schema=olm.package").ok(t)
			}
			_, gets, _ := cs.Snapshot()
			for name, idx := range indexes {
				if gets[idx] != tc.opens[name] {
					t.Errorf("budget %d, requests %q: index of %s read %d times, want %d", tc.budget, tc.requests, name, gets[idx], tc.opens[name])
				}
			}
		}
	})
}

// WithReadGap trades a few unmatched bytes for fewer reads: the four runs
// of package p come in one Get from its first match to its last.
func TestReadGap(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs := interleaved()
		m, _ := store(t, s, "cat", "v1", objs)
		content, _ := catalog.ContentKey("cat", m.Digest)
		q := catalog.Query{Package: "p"}
		var first, last, off int64 = -1, 0, 0
		for _, o := range objs {
			if o.matches(q) {
				if first < 0 {
					first = off
				}
				last = off + int64(len(o.line))
			}
			off += int64(len(o.line))
		}
		cs := storagetest.NewCounting(s)
		c := serve(t, New(cs, WithReadGap(1<<20)))
		c.get("/catalogs/cat/api/v1/metas?package=none").ok(t)
		cs.Reset()
		if got := c.get("/catalogs/cat/api/v1/metas?package=p").ok(t); string(got) != string(filter(objs, q)) {
			t.Fatalf("with a read gap: %q", got)
		}
		wantReads(t, "read gap", cs, reads{
			stats: map[string]int{},
			gets:  map[string]int{content: 1},
			bytes: map[string]int64{content: last - first},
		})
	})
}

// Metas answers are cached by digest, query and encoding: a hit reads no
// content, concurrent misses fill once, and a new publish is a new key.
func TestResponseCache(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs := interleaved()
		m, _ := store(t, s, "cat", "v1", objs)
		content, _ := catalog.ContentKey("cat", m.Digest)
		qp := catalog.Query{Package: "p"}
		cs := storagetest.NewCounting(s)
		c := serve(t, New(cs, WithPointerTTL(0)))
		want := filter(objs, qp)

		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := c.get("/catalogs/cat/api/v1/metas?package=p").ok(t); !bytes.Equal(got, want) {
					t.Errorf("concurrent miss: %d bytes, want %d", len(got), len(want))
				}
			}()
		}
		wg.Wait()
		if _, gets, _ := cs.Snapshot(); gets[content] != runs(objs, qp) {
			t.Fatalf("16 concurrent misses read content %d times, want one fill of %d runs", gets[content], runs(objs, qp))
		}
		cs.Reset()
		r := c.get("/catalogs/cat/api/v1/metas?package=p", "Accept-Encoding: gzip")
		if r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Content-Length") == "" {
			t.Fatalf("gzip answer headers %v", r.header)
		}
		if got, err := gunzipErr(r.body); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("gzip answer: %v", err)
		}
		c.get("/catalogs/cat/api/v1/metas?package=p", "Accept-Encoding: gzip").ok(t)
		if _, gets, _ := cs.Snapshot(); gets[content] != runs(objs, qp) {
			t.Fatalf("gzip: content read %d times for a miss and a hit, want %d", gets[content], runs(objs, qp))
		}

		// A new publish changes the digest, and so the key.
		v2 := append(append([]object(nil), objs...), object{schema: "olm.bundle", pkg: "p", name: "p.new",
			line: []byte(`{"name":"p.new","package":"p","schema":"olm.bundle"}` + "\n")})
		store(t, s, "cat", "v2", v2)
		if got := c.get("/catalogs/cat/api/v1/metas?package=p").ok(t); !bytes.Equal(got, filter(v2, qp)) {
			t.Fatalf("after a new publish: %d bytes, want %d", len(got), len(filter(v2, qp)))
		}
	})
}
