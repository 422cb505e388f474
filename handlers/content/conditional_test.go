package content

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// Clients revalidate with If-None-Match (the ETag) or If-Modified-Since
// (Last-Modified); each endpoint, query and encoding has its own ETag.
func TestConditionalRequests(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(4, 2, 3, 2000, func(o object) { objs = append(objs, o) })
		store(t, s, "cat", "v1", objs)
		c := serve(t, New(s))

		paths := []string{
			"/catalogs/cat/api/v1/all",
			"/catalogs/cat/api/v1/metas",
			"/catalogs/cat/api/v1/metas?package=operator-001",
			"/catalogs/cat/api/v1/metas?schema=olm.bundle&package=operator-001",
			"/catalogs/cat/api/v1/metas?package=none",
		}
		seen := map[string]string{}
		for _, p := range paths {
			for _, ae := range []string{"identity", "gzip"} {
				first := c.get(p, "Accept-Encoding: "+ae)
				first.ok(t)
				tag, mod := first.header.Get("ETag"), first.header.Get("Last-Modified")
				if !strings.HasPrefix(tag, `"sha256-`) || !strings.HasSuffix(tag, `"`) {
					t.Fatalf("%s: ETag %q is not a strong tag of the digest", p, tag)
				}
				// An empty body is never gzipped: both encodings then get
				// the same representation, and tag.
				if prev, dup := seen[tag]; dup && prev != p {
					t.Errorf("%s and %s share ETag %s", p, prev, tag)
				}
				seen[tag] = p
				if gz := first.header.Get("Content-Encoding") == "gzip"; gz != strings.HasSuffix(tag, `-gzip"`) {
					t.Errorf("%s: ETag %s for Content-Encoding %q", p, tag, first.header.Get("Content-Encoding"))
				}
				lm, err := http.ParseTime(mod)
				if err != nil {
					t.Fatalf("%s: Last-Modified %q: %v", p, mod, err)
				}

				for _, tc := range []struct {
					headers []string
					code    int
				}{
					{[]string{"If-None-Match: " + tag}, 304},
					{[]string{"If-None-Match: \"x\", " + tag}, 304},
					{[]string{"If-None-Match: W/" + tag}, 304},
					{[]string{"If-None-Match: *"}, 304},
					{[]string{"If-None-Match: \"x\""}, 200},
					{[]string{"If-None-Match: " + strings.TrimSuffix(tag, `"`) + `x"`}, 200},
					{[]string{"If-Modified-Since: " + mod}, 304},
					{[]string{"If-Modified-Since: " + lm.Add(time.Hour).Format(http.TimeFormat)}, 304},
					{[]string{"If-Modified-Since: " + lm.Add(-time.Second).Format(http.TimeFormat)}, 200},
					{[]string{"If-Modified-Since: not a date"}, 200},
					// If-None-Match wins over If-Modified-Since.
					{[]string{"If-None-Match: \"x\"", "If-Modified-Since: " + mod}, 200},
					{[]string{"If-Match: " + tag}, 200},
					{[]string{"If-Match: W/" + tag}, 412},
					{[]string{"If-Match: \"x\""}, 412},
					{[]string{"If-Unmodified-Since: " + mod}, 200},
					{[]string{"If-Unmodified-Since: " + lm.Add(-time.Hour).Format(http.TimeFormat)}, 412},
				} {
					for _, method := range []string{"GET", "HEAD"} {
						r := c.do(method, p, append(tc.headers, "Accept-Encoding: "+ae)...)
						if r.code != tc.code {
							t.Errorf("%s %s %s %v: %d, want %d", method, p, ae, tc.headers, r.code, tc.code)
							continue
						}
						if tc.code != 304 {
							continue
						}
						if len(r.body) != 0 || r.header.Get("ETag") != tag || r.header.Get("Vary") != "Accept-Encoding" {
							t.Errorf("%s %s %v: 304 with body %q, ETag %q, Vary %q", method, p, tc.headers, r.body, r.header.Get("ETag"), r.header.Get("Vary"))
						}
						for _, k := range []string{"Content-Type", "Content-Encoding", "Content-Length"} {
							if v := r.header.Get(k); v != "" {
								t.Errorf("%s %s: 304 carries %s %q", method, p, k, v)
							}
						}
					}
				}
			}
		}
	})
}

// A client holding the identity ETag that now accepts gzip gets the gzip
// representation, not a 304 for bytes it does not have.
func TestETagIsPerEncoding(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(2, 1, 2, 2000, func(o object) { objs = append(objs, o) })
		store(t, s, "cat", "v1", objs)
		c := serve(t, New(s))
		plain := c.get("/catalogs/cat/api/v1/all")
		plain.ok(t)
		r := c.get("/catalogs/cat/api/v1/all", "Accept-Encoding: gzip", "If-None-Match: "+plain.header.Get("ETag"))
		if r.code != 200 || r.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("identity ETag with gzip accepted: %d %q", r.code, r.header.Get("Content-Encoding"))
		}
	})
}
