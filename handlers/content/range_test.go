package content

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

func TestRangeOnAll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		var objs []object
		syntheticObjects(3, 2, 3, 1500, func(o object) { objs = append(objs, o) })
		whole := concat(objs)
		size := int64(len(whole))
		store(t, s, "cat", "v1", objs)
		c := serve(t, New(s))
		const path = "/catalogs/cat/api/v1/all"
		first := c.get(path)
		tag, mod := first.header.Get("ETag"), first.header.Get("Last-Modified")
		lm, _ := http.ParseTime(mod)

		type want struct {
			code       int
			start, end int64 // inclusive, for 206
			invalid    bool  // a 416 for a malformed range: no Content-Range
		}
		for _, tc := range []struct {
			headers []string
			want    want
		}{
			{[]string{"Range: bytes=0-0"}, want{code: 206, start: 0, end: 0}},
			{[]string{"Range: bytes=0-99"}, want{code: 206, start: 0, end: 99}},
			{[]string{"Range: bytes=100-"}, want{code: 206, start: 100, end: size - 1}},
			{[]string{"Range: bytes=-50"}, want{code: 206, start: size - 50, end: size - 1}},
			{[]string{"Range: bytes=-99999999"}, want{code: 206, start: 0, end: size - 1}},
			{[]string{fmt.Sprintf("Range: bytes=%d-99999999", size-10)}, want{code: 206, start: size - 10, end: size - 1}},
			{[]string{"Range: bytes=5-9,"}, want{code: 206, start: 5, end: 9}},
			// Gzip is never applied to a range.
			{[]string{"Range: bytes=10-20", "Accept-Encoding: gzip"}, want{code: 206, start: 10, end: 20}},
			{[]string{"Range: bytes=10-20", "If-Range: " + tag}, want{code: 206, start: 10, end: 20}},
			{[]string{"Range: bytes=10-20", "If-Range: " + mod}, want{code: 206, start: 10, end: 20}},
			// A stale If-Range gets the whole, current catalog.
			{[]string{"Range: bytes=10-20", "If-Range: \"old\""}, want{code: 200}},
			{[]string{"Range: bytes=10-20", "If-Range: W/" + tag}, want{code: 200}},
			{[]string{"Range: bytes=10-20", "If-Range: " + lm.Add(-time.Second).Format(http.TimeFormat)}, want{code: 200}},
			// Unsatisfiable byte ranges say the size; malformed ones, and
			// units other than bytes, are 416 too (http.ServeContent, as
			// catalogd).
			{[]string{fmt.Sprintf("Range: bytes=%d-", size)}, want{code: 416}},
			{[]string{"Range: bytes=99999999-99999999"}, want{code: 416}},
			{[]string{"Range: bytes=9-5"}, want{code: 416, invalid: true}},
			{[]string{"Range: bytes=a-5"}, want{code: 416, invalid: true}},
			{[]string{"Range: bytes=5"}, want{code: 416, invalid: true}},
			{[]string{"Range: bytes=99999999999999999999-"}, want{code: 416, invalid: true}},
			{[]string{"Range: BYTES = 5-9"}, want{code: 416, invalid: true}},
			{[]string{"Range: items=0-1"}, want{code: 416, invalid: true}},
			{[]string{"Range: nonsense"}, want{code: 416, invalid: true}},
			// Preconditions come before the range.
			{[]string{"Range: bytes=0-9", "If-None-Match: " + tag}, want{code: 304}},
		} {
			r := c.get(path, tc.headers...)
			if r.err != nil || r.code != tc.want.code {
				t.Errorf("%v: %d (%v), want %d: %.100s", tc.headers, r.code, r.err, tc.want.code, r.body)
				continue
			}
			switch r.code {
			case 206:
				wantBody := whole[tc.want.start : tc.want.end+1]
				if !bytes.Equal(r.body, wantBody) {
					t.Errorf("%v: body %q, want %q", tc.headers, r.body, wantBody)
				}
				wantHeaders(t, r.header, map[string]string{
					"Content-Range":    fmt.Sprintf("bytes %d-%d/%d", tc.want.start, tc.want.end, size),
					"Content-Length":   fmt.Sprint(len(wantBody)),
					"Content-Type":     "application/jsonl",
					"Content-Encoding": "",
					"ETag":             tag,
					"Last-Modified":    mod,
				})
			case 200:
				if !bytes.Equal(r.body, whole) || r.header.Get("Content-Range") != "" {
					t.Errorf("%v: 200 is not the whole catalog (Content-Range %q)", tc.headers, r.header.Get("Content-Range"))
				}
			case 416:
				want := fmt.Sprintf("bytes */%d", size)
				if tc.want.invalid {
					want = ""
				}
				if got := r.header.Get("Content-Range"); got != want {
					t.Errorf("%v: 416 Content-Range %q", tc.headers, got)
				}
			}
		}
	})
}

// Several ranges are answered multipart, each part with its Content-Range.
func TestMultipartRangeOnAll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, whole := tinyObjects(t)
		store(t, s, "tiny", "v1", objs)
		c := serve(t, New(s))
		r := c.get("/catalogs/tiny/api/v1/all", "Range: bytes=0-1,5-6")
		ct := r.header.Get("Content-Type")
		_, params, err := mime.ParseMediaType(ct)
		if r.code != 206 || err != nil || !strings.HasPrefix(ct, "multipart/byteranges") {
			t.Fatalf("%d %q", r.code, ct)
		}
		mr := multipart.NewReader(bytes.NewReader(r.body), params["boundary"])
		for _, want := range [][2]int{{0, 1}, {5, 6}} {
			p, err := mr.NextPart()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(p)
			if !bytes.Equal(got, whole[want[0]:want[1]+1]) || p.Header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", want[0], want[1], len(whole)) {
				t.Fatalf("part %q %q", got, p.Header.Get("Content-Range"))
			}
		}
	})
}

// /metas honours a single Range too (catalogd's metas handler ignores it).
func TestRangeOnMetas(t *testing.T) {
	// catalogd's /metas ignores Range: the whole answer, no range offered.
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, whole := tinyObjects(t)
		store(t, s, "tiny", "v1", objs)
		for _, h := range []*Handler{New(s), New(s, WithResponseCacheSize(0))} {
			c := serve(t, h)
			for _, hdr := range []string{"Range: bytes=10-19", "Range: bytes=0-0,5-9", "Range: items=1-2"} {
				r := c.get("/catalogs/tiny/api/v1/metas", hdr)
				if r.code != 200 || !bytes.Equal(r.body, whole) || r.header.Get("Content-Range") != "" || r.header.Get("Accept-Ranges") != "" {
					t.Fatalf("metas with %s: %d %q %q %q", hdr, r.code, r.body, r.header.Get("Content-Range"), r.header.Get("Accept-Ranges"))
				}
			}
		}
	})
}
