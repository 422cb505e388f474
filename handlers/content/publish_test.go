package content

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

func versionObjects(version string, n int) []object {
	var objs []object
	for i := range n {
		name := fmt.Sprintf("op-%d", i)
		objs = append(objs, object{"olm.package", "", name, fmt.Appendf(nil, `{"name":%q,"schema":"olm.package","version":%q}`+"\n", name, version)})
		objs = append(objs, object{"olm.bundle", name, name + ".v1", fmt.Appendf(nil, `{"name":%q,"package":%q,"schema":"olm.bundle","version":%q}`+"\n", name+".v1", name, version)})
	}
	return objs
}

// The handler serves the last published content while a new one is being
// written, and switches once it is published; here with the pointer
// checked on every request.
func TestServesLastGoodPublish(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		v1, v2 := versionObjects("1", 5), versionObjects("2", 7)
		store(t, s, "cat", "v1", v1)
		c := serve(t, New(s, WithPointerTTL(0)))
		check := func(step string, want []object) {
			t.Helper()
			if got := c.get("/catalogs/cat/api/v1/all").ok(t); !bytes.Equal(got, concat(want)) {
				t.Fatalf("%s: /all is %q", step, got)
			}
			q := catalog.Query{Package: "op-1"}
			if got := c.get("/catalogs/cat/api/v1/metas?package=op-1").ok(t); !bytes.Equal(got, filter(want, q)) {
				t.Fatalf("%s: metas is %q", step, got)
			}
		}
		check("published v1", v1)

		// A sync in progress: v2's writer has streamed part of it.
		d2 := digestOf("cat/v2")
		w, err := catalog.NewWriter(context.Background(), s, "cat", d2)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range v2[:3] {
			if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
				t.Fatal(err)
			}
		}
		check("v2 being written", v1)
		// The sync fails.
		w.Abort()
		check("v2 aborted", v1)
		// A later sync writes all of v2 but has not published yet.
		writeCatalog(t, s, "cat", d2, v2)
		check("v2 written, not published", v1)
		publish(t, s, "cat", d2)
		check("v2 published", v2)
		// Unpublished (the catalog was deleted): gone at once.
		del(t, s, catalog.PointerKey("cat"))
		for _, p := range []string{"/catalogs/cat/api/v1/all", "/catalogs/cat/api/v1/metas"} {
			if r := c.get(p); r.code != 404 {
				t.Errorf("pointer deleted: %s: %d", p, r.code)
			}
		}
	})
}

// Replicas share nothing but the store: one publishes, the others see it
// within their pointer TTL.
func TestReplicasSeePublishWithinTTL(t *testing.T) {
	forEachBackendReplicas(t, func(t *testing.T, handle func() storage.Store) {
		v1, v2 := versionObjects("1", 3), versionObjects("2", 4)
		publisher := handle()
		store(t, publisher, "cat", "v1", v1)

		const ttl = 50 * time.Millisecond
		short := serve(t, New(handle(), WithPointerTTL(ttl)))
		long := serve(t, New(handle(), WithPointerTTL(time.Hour)))
		every := serve(t, New(handle(), WithPointerTTL(0)))
		for _, c := range []*client{short, long, every} {
			if got := c.get("/catalogs/cat/api/v1/all").ok(t); !bytes.Equal(got, concat(v1)) {
				t.Fatalf("before publish: %q", got)
			}
		}

		_, p2 := store(t, publisher, "cat", "v2", v2)
		published := time.Now()
		if got := every.get("/catalogs/cat/api/v1/all").ok(t); !bytes.Equal(got, concat(v2)) {
			t.Errorf("TTL 0: still serves v1 right after the publish")
		}
		// The cache is what serves: an hour-long TTL keeps v1.
		if got := long.get("/catalogs/cat/api/v1/all").ok(t); !bytes.Equal(got, concat(v1)) {
			t.Errorf("TTL 1h: switched to v2 without a pointer check")
		}
		time.Sleep(time.Until(published.Add(ttl)))
		r := short.get("/catalogs/cat/api/v1/all")
		if got := r.ok(t); !bytes.Equal(got, concat(v2)) {
			t.Errorf("TTL %v: v1 still served %v after the publish", ttl, time.Since(published))
		}
		if lm := r.header.Get("Last-Modified"); lm != p2.PublishedAt.UTC().Format(http.TimeFormat) {
			t.Errorf("Last-Modified %q, published at %v", lm, p2.PublishedAt)
		}
	})
}

// Invalidate makes a publish by this process visible at once.
func TestInvalidate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		v1, v2 := versionObjects("1", 2), versionObjects("2", 2)
		store(t, s, "cat", "v1", v1)
		h := New(s, WithPointerTTL(time.Hour))
		c := serve(t, h)
		c.get("/catalogs/cat/api/v1/all").ok(t)
		store(t, s, "cat", "v2", v2)
		h.Invalidate("cat")
		if got := c.get("/catalogs/cat/api/v1/all").ok(t); !bytes.Equal(got, concat(v2)) {
			t.Fatalf("after Invalidate: %q", got)
		}
	})
}

// Publishing the same content again (back to an earlier digest, or under
// another ref) moves Last-Modified forward, so If-Modified-Since clients do
// not keep what they fetched in between; the ETag names the content.
func TestRepublishMovesLastModified(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		v1, v2 := versionObjects("1", 2), versionObjects("2", 2)
		d1, d2 := digestOf("cat/v1"), digestOf("cat/v2")
		writeCatalog(t, s, "cat", d1, v1)
		writeCatalog(t, s, "cat", d2, v2)
		t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		c := serve(t, New(s, WithPointerTTL(0)))

		at := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
		for i, step := range []struct {
			digest, ref string
			want        []object
		}{
			{d1, "example.com/cat:a", v1},
			{d2, "example.com/cat:a", v2},
			{d1, "example.com/cat:a", v1}, // back
			{d1, "example.com/cat:b", v1}, // same content, another ref
		} {
			when := time.Duration(i) * time.Minute
			publishPointer(t, s, "cat", catalog.Pointer{Digest: step.digest, Ref: step.ref, PublishedAt: t0.Add(when)})
			r := c.get("/catalogs/cat/api/v1/all", "If-Modified-Since: "+at(when-time.Second))
			if got := r.ok(t); !bytes.Equal(got, concat(step.want)) {
				t.Fatalf("step %d: %q", i, got)
			}
			if lm := r.header.Get("Last-Modified"); lm != at(when) {
				t.Errorf("step %d: Last-Modified %s, want %s", i, lm, at(when))
			}
			if tag := `"` + strings.Replace(step.digest, ":", "-", 1) + `"`; r.header.Get("ETag") != tag {
				t.Errorf("step %d: ETag %s, want %s", i, r.header.Get("ETag"), tag)
			}
			if r := c.get("/catalogs/cat/api/v1/all", "If-Modified-Since: "+at(when)); r.code != 304 {
				t.Errorf("step %d: If-Modified-Since Last-Modified: %d", i, r.code)
			}
		}
	})
}

// Under concurrent requests and publishes, every response is one whole
// catalog, with the ETag of that catalog: never a mix.
func TestConcurrentPublishes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		versions := map[string][]byte{}
		tags := map[string]string{}
		for i := range 4 {
			objs := versionObjects(fmt.Sprint(i), 20+i)
			m := writeCatalog(t, s, "cat", digestOf(i), objs)
			versions[m.Digest] = filter(objs, catalog.Query{Schema: "olm.bundle"})
		}
		publish(t, s, "cat", digestOf(0))
		c := serve(t, New(s, WithPointerTTL(0), WithCacheSize(1<<20)))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		for g := range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := c.try("GET", "/catalogs/cat/api/v1/metas?schema=olm.bundle", "Accept-Encoding: "+[]string{"gzip", ""}[g%2])
					body := r.body
					if err == nil && r.err == nil && r.code == 200 && r.header.Get("Content-Encoding") == "gzip" {
						body, err = gunzipErr(r.body)
					}
					if err != nil || r.err != nil || r.code != 200 {
						t.Errorf("status %d, errors %v, %v", r.code, err, r.err)
						cancel()
						return
					}
					found := ""
					for d, want := range versions {
						if bytes.Equal(body, want) {
							found = d
						}
					}
					if found == "" {
						t.Errorf("response is no published version: %.200q", body)
						cancel()
						return
					}
					mu.Lock()
					if prev, ok := tags[r.header.Get("ETag")]; ok && prev != found {
						t.Errorf("ETag %s names two contents", r.header.Get("ETag"))
					}
					tags[r.header.Get("ETag")] = found
					mu.Unlock()
				}
			})
		}
		for i := 1; i < 40; i++ {
			publish(t, s, "cat", digestOf(i%4))
			time.Sleep(2 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		if len(tags) < 2 {
			t.Errorf("responses saw %d versions; the publishes were not observed", len(tags))
		}
	})
}
