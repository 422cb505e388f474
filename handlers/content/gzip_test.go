package content

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// lineOfSize returns an object whose line is exactly n bytes.
func lineOfSize(t testing.TB, schema, name string, n int) object {
	t.Helper()
	line := fmt.Sprintf(`{"name":%q,"pad":"","schema":%q}`+"\n", name, schema)
	if len(line) > n {
		t.Fatalf("line of %d bytes asked, minimum %d", n, len(line))
	}
	line = strings.Replace(line, `"pad":""`, `"pad":"`+strings.Repeat("x", n-len(line))+`"`, 1)
	return object{schema, "", name, []byte(line)}
}

// Bodies reaching the minimum size are gzipped for clients that accept
// gzip, smaller ones are not; the size is decided before writing: the
// catalog's size for /all, the index's count for /metas.
func TestGzipThreshold(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		for _, tc := range []struct {
			opts []Option
			min  int
		}{
			{nil, DefaultGzipMinSize},
			{[]Option{WithGzipMinSize(1400)}, 1400},
		} {
			c := serve(t, New(s, tc.opts...))
			for _, size := range []int{tc.min - 1, tc.min, tc.min + 1} {
				name := fmt.Sprintf("size-%d", size)
				// /all is the one line; /metas?schema=a selects it out of
				// a larger catalog.
				objs := []object{lineOfSize(t, "a", "x", size), lineOfSize(t, "b", "y", 3000)}
				store(t, s, name, "v1", objs[:1])
				store(t, s, name+"-m", "v1", objs)
				for _, path := range []string{"/catalogs/" + name + "/api/v1/all", "/catalogs/" + name + "-m/api/v1/metas?schema=a"} {
					r := c.get(path, "Accept-Encoding: gzip")
					got := r.ok(t)
					if !bytes.Equal(got, objs[0].line) {
						t.Fatalf("%s: body differs", path)
					}
					wantGz := size >= tc.min
					if gz := r.header.Get("Content-Encoding") == "gzip"; gz != wantGz {
						t.Errorf("min %d, %s (%d bytes): gzip %v, want %v", tc.min, path, size, gz, wantGz)
					}
					if wantGz {
						// No ranges over gzip; the handler sets no length
						// (net/http adds the compressed one when the body
						// fit its buffer).
						wantHeaders(t, r.header, map[string]string{"Accept-Ranges": "", "Vary": "Accept-Encoding"})
						if cl := r.header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(r.body)) {
							t.Errorf("%s: Content-Length %s for %d gzip bytes", path, cl, len(r.body))
						}
						if len(r.body) >= size {
							t.Errorf("%s: gzip body of %d bytes for %d", path, len(r.body), size)
						}
					} else {
						wantHeaders(t, r.header, map[string]string{"Content-Length": fmt.Sprint(size), "Vary": "Accept-Encoding"})
					}
				}
			}
		}
	})
}

func TestGzipNegotiation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs := []object{lineOfSize(t, "a", "x", 5000)}
		store(t, s, "cat", "v1", objs)
		c := serve(t, New(s))
		disabled := serve(t, New(s, WithGzipMinSize(-1)))
		fast := serve(t, New(s, WithGzipLevel(1)))
		for ae, want := range map[string]bool{
			"":                      false,
			"gzip":                  true,
			"GZIP":                  true,
			"x-gzip":                true,
			"deflate, gzip;q=0.5":   true,
			"br;q=1.0, gzip ; q=1":  true,
			"gzip;q=0":              false,
			"gzip;q=0.0, deflate":   false,
			"deflate":               false,
			"identity":              false,
			"*":                     false,
			"gzipped, notgzip":      false,
			"gzip;q=bogus":          true,
			"deflate,\tgzip;level=": true,
		} {
			for _, p := range []string{"/catalogs/cat/api/v1/all", "/catalogs/cat/api/v1/metas"} {
				r := c.get(p, "Accept-Encoding: "+ae)
				if got := r.ok(t); !bytes.Equal(got, objs[0].line) {
					t.Fatalf("%s %q: body differs", p, ae)
				}
				if gz := r.header.Get("Content-Encoding") == "gzip"; gz != want {
					t.Errorf("%s Accept-Encoding %q: gzip %v, want %v", p, ae, gz, want)
				}
			}
		}
		if r := disabled.get("/catalogs/cat/api/v1/all", "Accept-Encoding: gzip"); r.header.Get("Content-Encoding") != "" {
			t.Errorf("gzip disabled but sent %q", r.header.Get("Content-Encoding"))
		}
		r := fast.get("/catalogs/cat/api/v1/metas", "Accept-Encoding: gzip")
		if got := r.ok(t); r.header.Get("Content-Encoding") != "gzip" || !bytes.Equal(got, objs[0].line) {
			t.Errorf("level 1: %q", r.header.Get("Content-Encoding"))
		}
		// An invalid level is reported and replaced by the default.
		log, rec := newLogger()
		bad := serve(t, New(s, WithGzipLevel(42), WithLogger(log)))
		if len(rec.at(slog.LevelWarn)) != 1 {
			t.Errorf("invalid level: warnings %q", rec.at(slog.LevelWarn))
		}
		r = bad.get("/catalogs/cat/api/v1/metas", "Accept-Encoding: gzip")
		if got := r.ok(t); r.header.Get("Content-Encoding") != "gzip" || !bytes.Equal(got, objs[0].line) {
			t.Errorf("invalid level: %q", r.header.Get("Content-Encoding"))
		}
	})
}

// A large gzipped response decompresses to the same bytes as identity,
// over many writer reuses from the pool.
func TestGzipLarge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(20, 4, 10, 8000, func(o object) { objs = append(objs, o) })
		store(t, s, "big", "v1", objs)
		c := serve(t, New(s))
		for i := range 3 {
			r := c.get("/catalogs/big/api/v1/all", "Accept-Encoding: gzip")
			if got := r.ok(t); !bytes.Equal(got, concat(objs)) || r.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("round %d: gzipped /all differs", i)
			}
			// Streamed, never buffered whole: no length known up front.
			if cl := r.header.Get("Content-Length"); cl != "" {
				t.Fatalf("round %d: gzipped /all of %d bytes has Content-Length %s", i, len(concat(objs)), cl)
			}
			q := catalog.Query{Package: fmt.Sprintf("operator-%03d", i)}
			r = c.get("/catalogs/big/api/v1/metas?package="+q.Package, "Accept-Encoding: gzip")
			if got := r.ok(t); !bytes.Equal(got, filter(objs, q)) || r.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("round %d: gzipped metas differs", i)
			}
		}
	})
}
