package content

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// Content sharing lines with earlier content (catalog.ShareFrom) is served
// as if it were one catalog.jsonl: /all whole, gzipped and by ranges that
// cross its extents, and /metas, on both backends.
func TestSharedContentServed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		var v1 []object
		syntheticObjects(4, 2, 3, 700, func(o object) { v1 = append(v1, o) })
		m1 := writeCatalog(t, s, "cat", digestOf("v1"), v1)
		// v2: v1 with every object of operator-002 replaced by a new line.
		w, err := catalog.NewWriter(ctx, s, "cat", digestOf("v2"), catalog.ShareFrom(m1))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		var v2 []object
		var off int64
		for _, o := range v1 {
			if o.pkg == "operator-002" {
				o.line = append(bytes.TrimSuffix(o.line, []byte("}\n")), []byte(`,"new":true}`+"\n")...)
				err = w.Add(o.schema, o.pkg, o.name, o.line)
			} else {
				err = w.AddShared(o.schema, o.pkg, o.name, off, int64(len(o.line)))
			}
			if err != nil {
				t.Fatal(err)
			}
			off += int64(len(v1[len(v2)].line))
			v2 = append(v2, o)
		}
		m2, err := w.Commit(ctx, catalog.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if len(m2.Extents) < 3 {
			t.Fatalf("v2 has %d extents: the test would cross none", len(m2.Extents))
		}
		publish(t, s, "cat", m2.Digest)
		want := concat(v2)
		c := serve(t, New(s))
		const all = "/catalogs/cat/api/v1/all"
		if got := c.get(all).ok(t); !bytes.Equal(got, want) {
			t.Fatalf("/all: %d bytes, want %d", len(got), len(want))
		}
		if r := c.get(all, "Accept-Encoding: gzip"); r.header.Get("Content-Encoding") != "gzip" || !bytes.Equal(r.ok(t), want) {
			t.Fatal("/all gzipped differs")
		}
		var start int64
		for _, e := range m2.Extents {
			// A range from inside one extent into the next.
			lo, hi := max(start+e.Len-50, 0), min(start+e.Len+49, int64(len(want))-1)
			r := c.get(all, fmt.Sprintf("Range: bytes=%d-%d", lo, hi))
			if r.code != 206 || !bytes.Equal(r.body, want[lo:hi+1]) {
				t.Fatalf("range %d-%d: %d %q", lo, hi, r.code, r.body)
			}
			start += e.Len
		}
		for _, pkg := range []string{"operator-000", "operator-002", "operator-003"} {
			q := catalog.Query{Package: pkg}
			if got := c.get("/catalogs/cat/api/v1/metas?" + url.Values{"package": {pkg}}.Encode()).ok(t); !bytes.Equal(got, filter(v2, q)) {
				t.Fatalf("metas of %s differ", pkg)
			}
		}
	})
}
