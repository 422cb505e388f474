package content

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

var endpoints = []string{
	"/catalogs/cat/api/v1/all",
	"/catalogs/cat/api/v1/metas",
	"/catalogs/cat/api/v1/metas?package=p",
}

func contentDir(t *testing.T, name, digest string) string {
	t.Helper()
	k, err := catalog.ContentKey(name, digest)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(k, "catalog.jsonl")
}

// A store that fails is answered 503 (retry later) with a log line; stored
// data the handler cannot use is 500.
func TestStorageErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs := interleaved()
		m, _ := store(t, s, "cat", "v1", objs)
		dir := contentDir(t, "cat", m.Digest)
		f := newFaulty(s)

		for _, tc := range []struct {
			name string
			warm bool // the handler has the catalog cached
			fail func(op, key string, call int) bool
			code int
		}{
			{"store down", false, func(string, string, int) bool { return true }, 503},
			{"pointer unreadable", false, func(op, key string, _ int) bool { return key == catalog.PointerKey("cat") && op == "get" }, 503},
			{"meta unreadable", false, func(_, key string, _ int) bool { return strings.HasSuffix(key, "meta.json") }, 503},
			{"index unreadable", false, func(_, key string, _ int) bool { return strings.HasSuffix(key, "/index") }, 503},
			{"content unreadable", false, func(_, key string, _ int) bool { return strings.HasSuffix(key, ".jsonl") }, 503},
			// Stale-if-error: what was served stays served while the
			// pointer cannot be checked.
			{"pointer check fails", true, func(op, _ string, _ int) bool { return op == "stat" }, 200},
			{"content unreadable, warm", true, func(_, key string, _ int) bool { return strings.HasSuffix(key, ".jsonl") }, 503},
		} {
			for _, path := range endpoints {
				log, rec := newLogger()
				c := serve(t, New(f, WithLogger(log), WithPointerTTL(0), WithResponseCacheSize(0)))
				if tc.warm {
					f.set(nil, nil)
					c.get(path).ok(t)
				}
				f.set(tc.fail, nil)
				r := c.get(path)
				f.set(nil, nil)
				if r.code != tc.code {
					t.Errorf("%s: %s: %d, want %d: %s", tc.name, path, r.code, tc.code, r.body)
				}
				if tc.code == 503 && r.header.Get("Retry-After") == "" {
					t.Errorf("%s: %s: 503 without Retry-After", tc.name, path)
				}
				if tc.code == 200 {
					if len(rec.at(slog.LevelWarn)) != 1 || len(rec.at(slog.LevelError)) != 0 {
						t.Errorf("%s: %s: logged warnings %q errors %q, want one warning", tc.name, path, rec.at(slog.LevelWarn), rec.at(slog.LevelError))
					}
				} else if len(rec.at(slog.LevelError)) != 1 {
					t.Errorf("%s: %s: logged errors %q, want one", tc.name, path, rec.at(slog.LevelError))
				}
				// Failures are not cached: the store back, the catalog is
				// served.
				if got := c.get(path).ok(t); len(got) == 0 {
					t.Errorf("%s: %s: empty after recovery", tc.name, path)
				}
			}
		}

		// Unusable stored data.
		for _, tc := range []struct {
			name   string
			damage func()
		}{
			{"meta corrupt", func() { put(t, s, dir+"meta.json", "{not json") }},
			{"index corrupt", func() { put(t, s, dir+"index", strings.Repeat("x", int(m.IndexSize))) }},
			{"index missing", func() { del(t, s, dir+"index") }},
			{"content missing", func() { del(t, s, dir+"catalog.jsonl") }},
			{"meta missing", func() { del(t, s, dir+"meta.json") }},
			{"pointer corrupt", func() { put(t, s, catalog.PointerKey("cat"), `{"digest":"nope"}`) }},
		} {
			m, _ := store(t, s, "cat", tc.name, objs)
			dir = contentDir(t, "cat", m.Digest)
			tc.damage()
			for _, path := range endpoints {
				log, rec := newLogger()
				c := serve(t, New(s, WithLogger(log)))
				if path == endpoints[2] && tc.name == "content missing" {
					// Answered from the index alone.
					path += "&name=absent"
					if r := c.get(path); r.code != 200 || len(r.body) != 0 {
						t.Errorf("%s: %s: %d %q", tc.name, path, r.code, r.body)
					}
					continue
				}
				if r := c.get(path); r.code != 500 {
					t.Errorf("%s: %s: %d, want 500: %s", tc.name, path, r.code, r.body)
				}
				if len(rec.at(slog.LevelError)) != 1 {
					t.Errorf("%s: %s: logged errors %q, want one", tc.name, path, rec.at(slog.LevelError))
				}
			}
		}
	})
}

func put(t *testing.T, s storage.Store, key, data string) {
	t.Helper()
	if _, err := s.Put(t.Context(), key, strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, s storage.Store, key string) {
	t.Helper()
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
}

// Content removed after a newer publish the cache has not seen yet is
// read again through the new pointer, not answered with an error.
func TestRetriesThroughNewPointer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		v1, v2 := versionObjects("1", 3), versionObjects("2", 3)
		m1, _ := store(t, s, "cat", "v1", v1)
		log, rec := newLogger()
		c := serve(t, New(s, WithPointerTTL(time.Hour), WithLogger(log)))
		for _, path := range endpoints[:2] {
			c.get(path).ok(t)
		}
		store(t, s, "cat", "v2", v2)
		// A collector removes v1 once v2 is published.
		del(t, s, contentDir(t, "cat", m1.Digest)+"catalog.jsonl")
		for _, path := range endpoints[:2] {
			if got := c.get(path).ok(t); !bytes.Equal(got, concat(v2)) {
				t.Errorf("%s: %q", path, got)
			}
		}
		if errs := rec.at(slog.LevelError); len(errs) != 0 {
			t.Errorf("logged %q", errs)
		}
	})
}

// A store failing after the response started leaves it visibly short:
// fewer bytes than Content-Length, or a gzip stream without its end.
func TestFailureMidStream(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(4, 2, 6, 20000, func(o object) { objs = append(objs, o) })
		// Two packages per query, so /metas makes several Gets.
		objs = append(objs, interleaved()...)
		store(t, s, "cat", "v1", objs)
		f := newFaulty(s)
		for _, tc := range []struct {
			path     string
			truncate func(key string, call int) int64
		}{
			{"/catalogs/cat/api/v1/all", func(key string, _ int) int64 { return onContent(key, 100_000) }},
			{"/catalogs/cat/api/v1/metas?package=p", func(key string, call int) int64 { return onContent(key, int64(call-3)) }},
			{"/catalogs/cat/api/v1/metas?schema=olm.bundle", func(key string, _ int) int64 { return onContent(key, 50_000) }},
		} {
			for _, ae := range []string{"identity", "gzip"} {
				log, rec := newLogger()
				c := serve(t, New(f, WithLogger(log), WithResponseCacheSize(0)))
				c.get(tc.path).ok(t) // warm: the failure hits content only
				f.set(nil, tc.truncate)
				r := c.get(tc.path, "Accept-Encoding: "+ae)
				f.set(nil, nil)
				// Runs fetched ahead may fail before the first byte is sent:
				// then the answer is a clean 503 instead of a short 200.
				if r.code == http.StatusServiceUnavailable && len(r.body) < 100 {
					if errs := rec.at(slog.LevelError); len(errs) != 1 {
						t.Errorf("%s %s: logged errors %q, want one", tc.path, ae, errs)
					}
					continue
				}
				if r.code != 200 {
					t.Fatalf("%s %s: %d", tc.path, ae, r.code)
				}
				complete := r.err == nil
				if complete && r.header.Get("Content-Encoding") == "gzip" {
					_, err := gunzipErr(r.body)
					complete = err == nil
				}
				if complete {
					t.Errorf("%s %s: a failed response reads as complete (%d bytes)", tc.path, ae, len(r.body))
				}
				if errs := rec.at(slog.LevelError); len(errs) != 1 {
					t.Errorf("%s %s: logged errors %q, want one", tc.path, ae, errs)
				}
			}
		}
	})
}

// onContent breaks catalog.jsonl reads after n bytes (n < 0: not this
// one).
func onContent(key string, n int64) int64 {
	if !strings.HasSuffix(key, "catalog.jsonl") {
		return -1
	}
	return n
}

// A client that goes away mid-response ends the request quietly: a debug
// line, no error.
func TestClientGoesAway(t *testing.T) {
	// 32 MB that gzip cannot shrink much: more than the socket buffers
	// hold, so the handler is still writing when the client leaves, gzip
	// or not. Random hex, built once: byte by byte under the race
	// detector it cost more than the test itself.
	r := rand.NewChaCha8([32]byte{1, 2})
	var objs []object
	raw := make([]byte, 8000)
	for i := range 2000 {
		_, _ = r.Read(raw)
		name := fmt.Sprintf("b%d", i)
		doc := append([]byte(`{"name":"`+name+`","pad":"`), hex.EncodeToString(raw)...)
		objs = append(objs, object{"olm.bundle", "p", name, append(doc, `","schema":"olm.bundle"}`+"\n"...)})
	}
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		store(t, s, "cat", "v1", objs)
		for _, path := range []string{"/catalogs/cat/api/v1/all", "/catalogs/cat/api/v1/metas?schema=olm.bundle"} {
			for _, ae := range []string{"identity", "gzip"} {
				log, rec := newLogger()
				h := New(s, WithLogger(log))
				done := make(chan struct{})
				c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					defer close(done)
					h.ServeHTTP(w, r)
				}))
				req, _ := http.NewRequest("GET", c.base+path, nil)
				req.Header.Set("Accept-Encoding", ae)
				res, err := c.hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(res.Body, make([]byte, 4096)); err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s %s: handler still running 10s after the client left", path, ae)
				}
				if errs := rec.at(slog.LevelError); len(errs) != 0 {
					t.Errorf("%s %s: logged errors %q", path, ae, errs)
				}
				if len(rec.at(slog.LevelDebug)) != 1 {
					t.Errorf("%s %s: debug lines %q, want one", path, ae, rec.at(slog.LevelDebug))
				}
			}
		}
	})
}
