package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// TestReadFactsRefusesBadRecordLengths: a summary whose record length is
// zero, over the record bound or cut short is refused whole, without
// allocating what the length claims (a damaged summary must cost the
// speed-up, never memory or the sync).
func TestReadFactsRefusesBadRecordLengths(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, summary := range [][]byte{
		{0},
		binary.AppendUvarint(nil, maxFactsRecord+1),
		binary.AppendUvarint(nil, 1<<62),
		{0x80}, // a length cut short
	} {
		digest := "sha256:" + string(rune('a'+i)) + "000000000000000000000000000000000000000000000000000000000000000"
		w, err := catalog.NewWriter(ctx, st, "c", digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add("olm.package", "p", "p", []byte(`{"name":"p","schema":"olm.package"}`+"\n")); err != nil {
			t.Fatal(err)
		}
		w.SetFiles(io.NewSectionReader(bytes.NewReader(summary), 0, int64(len(summary))))
		m, err := w.Commit(ctx, catalog.Meta{Ref: "example.test/c:v1"})
		if err != nil {
			t.Fatal(err)
		}
		if files, err := readFacts(ctx, st, m); !errors.Is(err, errFacts) || files != nil {
			t.Errorf("summary %x: %d files, %v; want refused", summary, len(files), err)
		}
	}
}

// TestReadFactsRecordRanges: a record must lie within catalog.jsonl; one
// that ends exactly at its end is the last file's and is kept.
func TestReadFactsRecordRanges(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"name":"p","schema":"olm.package"}` + "\n")
	size := int64(3 * len(line))
	for i, c := range []struct {
		off, n int64
		ok     bool
	}{
		{0, size, true},
		{size - int64(len(line)), int64(len(line)), true},
		{0, size + 1, false},
		{10, size - 5, false},
		{size, 1, false},
	} {
		w, err := catalog.NewWriter(ctx, st, "c", "sha256:"+string(rune('a'+i))+"100000000000000000000000000000000000000000000000000000000000000")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b", "c"} {
			if err := w.Add("olm.package", "", n, line); err != nil {
				t.Fatal(err)
			}
		}
		rec := appendFacts(nil, &fileFacts{Sum: [32]byte{1}, Off: c.off, Len: c.n, Objects: []objFact{{Schema: "olm.package", N: c.n}}})
		w.SetFiles(io.NewSectionReader(bytes.NewReader(rec), 0, int64(len(rec))))
		m, err := w.Commit(ctx, catalog.Meta{Ref: "example.test/c:v1"})
		if err != nil {
			t.Fatal(err)
		}
		files, err := readFacts(ctx, st, m)
		if c.ok != (err == nil && len(files) == 1) {
			t.Errorf("record %d+%d of a %d-byte catalog.jsonl: %d files, %v; want kept %v", c.off, c.n, size, len(files), err, c.ok)
		}
	}
}
