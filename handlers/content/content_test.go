package content

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// /all of catalogd's own test catalog is, byte for byte, the body catalogd
// serves for it.
func TestTinyAllIsCatalogdBody(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, want := tinyObjects(t)
		m, p := store(t, s, "tiny", "v1", objs)
		c := serve(t, New(s))
		// 435 bytes: below the gzip threshold, so identity either way.
		for _, ae := range []string{"", "gzip"} {
			r := c.get("/catalogs/tiny/api/v1/all", "Accept-Encoding: "+ae)
			if got := r.ok(t); !bytes.Equal(got, want) {
				t.Fatalf("Accept-Encoding %q: /all differs from expected_all.json:\n%s", ae, got)
			}
			wantHeaders(t, r.header, map[string]string{
				"Content-Type":     "application/jsonl",
				"Content-Length":   fmt.Sprint(len(want)),
				"Content-Encoding": "",
				"Accept-Ranges":    "bytes",
				"Vary":             "Accept-Encoding",
				"ETag":             `"` + strings.Replace(m.Digest, ":", "-", 1) + `"`,
				"Last-Modified":    p.PublishedAt.UTC().Format(http.TimeFormat),
			})
		}
		for q, want := range map[string]string{
			"schema=olm.package": `{"defaultChannel":"beta","name":"prometheus","schema":"olm.package"}` + "\n",
			"package=prometheus": string(filter(objs, catalog.Query{Package: "prometheus"})),
			"name=prometheus":    `{"defaultChannel":"beta","name":"prometheus","schema":"olm.package"}` + "\n",
			"schema=olm.channel&package=prometheus&name=beta": string(filter(objs, catalog.Query{Schema: "olm.channel", Name: "beta"})),
		} {
			r := c.get("/catalogs/tiny/api/v1/metas?" + q)
			if got := r.ok(t); string(got) != want {
				t.Errorf("metas?%s = %q, want %q", q, got, want)
			}
			wantHeaders(t, r.header, map[string]string{"Content-Type": "application/jsonl", "Content-Length": fmt.Sprint(len(want))})
		}
	})
}

func wantHeaders(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

// The status codes of every kind of request.
func TestStatusMatrix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, _ := tinyObjects(t)
		m, _ := store(t, s, "tiny", "v1", objs)
		store(t, s, "hidden", "v1", objs)
		h := New(s, WithAvailability(func(name string) bool { return name != "hidden" }))
		c := serve(t, h)
		tag := `"` + strings.Replace(m.Digest, ":", "-", 1) + `"`
		const all, metas = "/catalogs/tiny/api/v1/all", "/catalogs/tiny/api/v1/metas"
		for _, tc := range []struct {
			method, path string
			headers      []string
			code         int
		}{
			{"GET", all, nil, 200},
			{"HEAD", all, nil, 200},
			{"GET", all + "?ignored=1", nil, 200},
			{"GET", metas, nil, 200},
			{"HEAD", metas, nil, 200},
			{"GET", metas + "?package=prometheus", nil, 200},
			{"GET", metas + "?package=absent", nil, 200},
			{"GET", metas + "?schema=olm.package&package=&name=prometheus", nil, 200},
			{"GET", metas + "?catalog=tiny", nil, 400},
			{"GET", metas + "?schema=olm.package&limit=1", nil, 400},
			{"GET", metas + "?schema=%zz", nil, 400},
			{"GET", metas + "?schema=a;b", nil, 400},
			{"GET", "/catalogs/Tiny/api/v1/all", nil, 400},
			{"GET", "/catalogs/tiny_1/api/v1/metas", nil, 400},
			{"GET", "/catalogs/" + strings.Repeat("a", 254) + "/api/v1/all", nil, 400},
			{"GET", "/catalogs/%74iny/api/v1/all", nil, 200},
			{"GET", "/catalogs/ti%2Fny/api/v1/all", nil, 400},
			{"GET", "/catalogs/unknown/api/v1/all", nil, 404},
			{"GET", "/catalogs/unknown/api/v1/metas?package=x", nil, 404},
			{"HEAD", "/catalogs/unknown/api/v1/all", nil, 404},
			{"GET", "/catalogs/hidden/api/v1/all", nil, 404},
			{"GET", "/catalogs/hidden/api/v1/metas", nil, 404},
			{"GET", "/catalogs/tiny/api/v1/other", nil, 404},
			{"GET", "/catalogs/tiny/api/v2/all", nil, 404},
			{"GET", "/catalogs/tiny/api/v1/all/", nil, 404},
			{"GET", "/catalogs/tiny/all.json", nil, 404},
			{"GET", "/catalogs/tiny", nil, 404},
			{"GET", "/elsewhere", nil, 404},
			{"POST", all, nil, 405},
			{"PUT", metas, nil, 405},
			{"DELETE", all, nil, 405},
			{"OPTIONS", metas, nil, 405},
			{"GET", all, []string{"Range: bytes=0-9"}, 206},
			{"GET", all, []string{"Range: bytes=1000-"}, 416},
			{"GET", all, []string{"If-None-Match: " + tag}, 304},
			{"GET", metas, []string{"If-None-Match: *"}, 304},
			{"GET", all, []string{"If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT"}, 304},
			{"GET", all, []string{"If-Match: \"other\""}, 412},
		} {
			r := c.do(tc.method, tc.path, tc.headers...)
			if r.code != tc.code {
				t.Errorf("%s %s %v: %d, want %d: %s", tc.method, tc.path, tc.headers, r.code, tc.code, r.body)
				continue
			}
			if tc.code == 405 && r.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", tc.method, tc.path, r.header.Get("Allow"))
			}
			if tc.code == 412 || tc.code == 416 {
				// http.ServeContent's answer, catalogd's too: checked
				// against catalogd-ref by TestHTTPSemanticsOracle.
				continue
			}
			if tc.code >= 400 {
				// A short text, as catalogd's "404 Not Found".
				want := fmt.Sprintf("%d %s", tc.code, http.StatusText(tc.code))
				if tc.method != "HEAD" && !strings.HasPrefix(string(r.body), want) {
					t.Errorf("%s %s: body %q, want it to start with %q", tc.method, tc.path, r.body, want)
				}
				if r.header.Get("ETag") != "" || r.header.Get("Content-Encoding") != "" {
					t.Errorf("%s %s: error carries content headers %v", tc.method, tc.path, r.header)
				}
			}
		}
	})
}

// ServeHTTP serves under the base path; Routes and Mount let a caller
// place the same routes on its own router.
func TestMounting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, want := tinyObjects(t)
		store(t, s, "tiny", "v1", objs)

		outer := chi.NewRouter()
		New(s).Mount(outer)
		outer.Mount("/other", New(s).Routes())
		c := serve(t, outer)
		for _, p := range []string{"/catalogs/tiny/api/v1/all", "/other/tiny/api/v1/all"} {
			if got := c.get(p).ok(t); !bytes.Equal(got, want) {
				t.Errorf("%s: %q", p, got)
			}
		}
		if r := c.do("POST", "/catalogs/tiny/api/v1/all"); r.code != 405 || r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("mounted POST: %d, Allow %q", r.code, r.header.Get("Allow"))
		}

		for base, path := range map[string]string{"/": "/tiny/api/v1/all", "/v1/cat/": "/v1/cat/tiny/api/v1/all"} {
			c := serve(t, New(s, WithBasePath(base)))
			if got := c.get(path).ok(t); !bytes.Equal(got, want) {
				t.Errorf("base %q: %s: %q", base, path, got)
			}
			if r := c.get("/catalogs/tiny/api/v1/all"); r.code != 404 {
				t.Errorf("base %q: default path answered %d", base, r.code)
			}
		}
	})
}

// HEAD answers with exactly GET's headers and no body, in every case.
func TestHeadMatchesGet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(3, 2, 4, 3000, func(o object) { objs = append(objs, o) })
		store(t, s, "cat", "v1", objs)
		c := serve(t, New(s))
		for _, tc := range []struct {
			path    string
			headers []string
		}{
			{"/catalogs/cat/api/v1/all", nil},
			{"/catalogs/cat/api/v1/all", []string{"Accept-Encoding: gzip"}},
			{"/catalogs/cat/api/v1/all", []string{"Range: bytes=10-99"}},
			{"/catalogs/cat/api/v1/all", []string{"Range: bytes=99999999-"}},
			{"/catalogs/cat/api/v1/metas?package=operator-001", nil},
			{"/catalogs/cat/api/v1/metas?package=operator-001", []string{"Accept-Encoding: gzip"}},
			{"/catalogs/cat/api/v1/metas?schema=olm.package", []string{"Accept-Encoding: gzip"}},
			{"/catalogs/cat/api/v1/metas?package=none", nil},
			{"/catalogs/cat/api/v1/metas?bad=1", nil},
			{"/catalogs/missing/api/v1/all", nil},
		} {
			get := c.get(tc.path, tc.headers...)
			head := c.do("HEAD", tc.path, tc.headers...)
			if get.code != head.code {
				t.Errorf("%s %v: GET %d, HEAD %d", tc.path, tc.headers, get.code, head.code)
			}
			if len(head.body) != 0 {
				t.Errorf("%s %v: HEAD has a %d-byte body", tc.path, tc.headers, len(head.body))
			}
			get.header.Del("Date")
			head.header.Del("Date")
			if get.header.Get("Content-Encoding") == "gzip" && get.header.Get("Content-Length") == fmt.Sprint(len(get.body)) {
				// net/http adds the length of a compressed body that fit
				// its buffer; a HEAD, which compresses nothing, cannot.
				get.header.Del("Content-Length")
			}
			if fmt.Sprint(get.header) != fmt.Sprint(head.header) {
				t.Errorf("%s %v: headers differ:\nGET  %v\nHEAD %v", tc.path, tc.headers, get.header, head.header)
			}
		}
	})
}

func TestPointerKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, _ := tinyObjects(t)
		store(t, s, "tiny", "v1", objs)
		_, etag, err := catalog.Current(t.Context(), s, "tiny")
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stat(t.Context(), catalog.PointerKey("tiny"))
		if err != nil || st.ETag != etag {
			t.Fatalf("Stat(%s) = %v, %v; catalog.Current's ETag is %q", catalog.PointerKey("tiny"), st, err, etag)
		}
	})
}
