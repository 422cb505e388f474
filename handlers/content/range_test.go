package content

import (
	"bytes"
	"fmt"
	"net/http"
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
		}
		for _, tc := range []struct {
			headers []string
			want    want
		}{
			{[]string{"Range: bytes=0-0"}, want{206, 0, 0}},
			{[]string{"Range: bytes=0-99"}, want{206, 0, 99}},
			{[]string{"Range: bytes=100-"}, want{206, 100, size - 1}},
			{[]string{"Range: bytes=-50"}, want{206, size - 50, size - 1}},
			{[]string{"Range: bytes=-99999999"}, want{206, 0, size - 1}},
			{[]string{fmt.Sprintf("Range: bytes=%d-99999999", size-10)}, want{206, size - 10, size - 1}},
			{[]string{"Range: BYTES = 5-9"}, want{206, 5, 9}},
			{[]string{"Range: bytes=5-9,"}, want{206, 5, 9}},
			// Gzip is never applied to a range.
			{[]string{"Range: bytes=10-20", "Accept-Encoding: gzip"}, want{206, 10, 20}},
			{[]string{"Range: bytes=10-20", "If-Range: " + tag}, want{206, 10, 20}},
			{[]string{"Range: bytes=10-20", "If-Range: " + mod}, want{206, 10, 20}},
			// A stale If-Range gets the whole, current catalog.
			{[]string{"Range: bytes=10-20", "If-Range: \"old\""}, want{code: 200}},
			{[]string{"Range: bytes=10-20", "If-Range: W/" + tag}, want{code: 200}},
			{[]string{"Range: bytes=10-20", "If-Range: " + lm.Add(-time.Second).Format(http.TimeFormat)}, want{code: 200}},
			// Several ranges, or another unit: ignored.
			{[]string{"Range: bytes=0-1,5-6"}, want{code: 200}},
			{[]string{"Range: items=0-1"}, want{code: 200}},
			{[]string{"Range: nonsense"}, want{code: 200}},
			// Unsatisfiable or malformed byte ranges.
			{[]string{fmt.Sprintf("Range: bytes=%d-", size)}, want{code: 416}},
			{[]string{"Range: bytes=99999999-99999999"}, want{code: 416}},
			{[]string{"Range: bytes=-0"}, want{code: 416}},
			{[]string{"Range: bytes=9-5"}, want{code: 416}},
			{[]string{"Range: bytes=a-5"}, want{code: 416}},
			{[]string{"Range: bytes=+1-5"}, want{code: 416}},
			{[]string{"Range: bytes=5"}, want{code: 416}},
			{[]string{"Range: bytes="}, want{code: 416}},
			{[]string{"Range: bytes=99999999999999999999-"}, want{code: 416}},
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
				if got := r.header.Get("Content-Range"); got != fmt.Sprintf("bytes */%d", size) {
					t.Errorf("%v: 416 Content-Range %q", tc.headers, got)
				}
			}
		}
	})
}

// Range applies to /all only, as catalogd's metas handler copies the body
// without ServeContent.
func TestRangeIgnoredOnMetas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		objs, whole := tinyObjects(t)
		store(t, s, "tiny", "v1", objs)
		c := serve(t, New(s))
		r := c.get("/catalogs/tiny/api/v1/metas", "Range: bytes=0-9")
		if got := r.ok(t); !bytes.Equal(got, whole) {
			t.Fatalf("metas with Range: %q", got)
		}
	})
}
