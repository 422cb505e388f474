package fbc

import (
	"bytes"
	"strings"
	"testing"
)

const borrowDoc = `schema: olm.package
name: a
---
schema: olm.package
name: bb
---
schema: olm.bundle
package: a
name: a.v1
image: quay.example/a:v1
`

// TestBlobsKeptUnlessBorrowed checks a Blob stays the caller's after fn
// returns, and that BorrowBlobs lends the same bytes while fn runs.
func TestBlobsKeptUnlessBorrowed(t *testing.T) {
	var kept, copied [][]byte
	err := Parse(strings.NewReader(borrowDoc), func(o Object) error {
		kept = append(kept, o.Blob)
		copied = append(copied, bytes.Clone(o.Blob))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 {
		t.Fatalf("%d objects, want 3", len(kept))
	}
	for i := range kept {
		if !bytes.Equal(kept[i], copied[i]) {
			t.Fatalf("object %d's Blob changed after its fn returned: %q, was %q", i, kept[i], copied[i])
		}
	}
	var lent [][]byte
	err = Parse(strings.NewReader(borrowDoc), func(o Object) error {
		lent = append(lent, bytes.Clone(o.Blob))
		return nil
	}, BorrowBlobs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range lent {
		if !bytes.Equal(lent[i], copied[i]) {
			t.Fatalf("borrowed object %d: %q, want %q", i, lent[i], copied[i])
		}
	}
	// A later Parse without the option owns its blobs again: the option
	// does not stay on the pooled parser.
	kept = kept[:0]
	if err := Parse(strings.NewReader(borrowDoc), func(o Object) error { kept = append(kept, o.Blob); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range kept {
		if !bytes.Equal(kept[i], copied[i]) {
			t.Fatalf("after a borrowing parse, object %d's Blob changed after fn: %q", i, kept[i])
		}
	}
}
