package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"slices"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/fbc"
)

const dropFBC = `{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1","skips":["p.v0"]}]}
{"schema":"olm.bundle","package":"p","name":"p.v1","image":"registry.example.com/p:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v2","image":"registry.example.com/p:v2","properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}}]}
`

// A file the streamer wrote keeps only where its lines lie in the spool:
// its facts and shape, read back from its summary record, are the ones
// its parse gave, and writing it again (a lost bet) records the same.
func TestWrittenFileKeepsOnlyItsRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := newSpool(dir, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	pp := newParsePool(sp, dir, 4<<20, 1<<20, 1)
	body := []byte(dropFBC)
	fr := pp.parseOrReuse(ctx, sha256.Sum256(body), 1, false, func(x *fbc.Parser, fn func(fbc.Object) error) error {
		return x.ParseBytes(body, fn, fbc.BorrowBlobs())
	})
	if fr.err != nil || len(fr.objs) != 4 {
		t.Fatalf("parse: %d objects, %v", len(fr.objs), fr.err)
	}
	want, wantOffs, wantShape, err := fr.parsedFacts()
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(digest string) []byte {
		t.Helper()
		w, err := catalog.NewWriter(ctx, st, "c", digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Abort)
		cw, err := newContentWrite(w, st, sp, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cw.remove)
		at, err := cw.file(ctx, "a.json", fr)
		if err != nil || at == nil {
			t.Fatalf("file: %v %v", at, err)
		}
		rec := make([]byte, at.n)
		if err := at.sp.readAt(rec, at.off); err != nil {
			t.Fatal(err)
		}
		if fr.written == nil {
			fr.drop(at)
		}
		return rec
	}
	first := write("sha256:" + string(bytes.Repeat([]byte("a"), 64)))
	if fr.objs != nil || fr.shape != nil {
		t.Fatalf("a written file still holds %d objects and a %d-byte shape", len(fr.objs), len(fr.shape))
	}
	got, offs, shape, err := fr.parsedFacts()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(objs []objFact) []byte {
		var n int64
		for _, o := range objs {
			n += o.N
		}
		return appendFacts(nil, &fileFacts{Len: n, Objects: objs})
	}
	if !bytes.Equal(enc(got), enc(want)) || !slices.Equal(offs, wantOffs) || !bytes.Equal(shape, wantShape) {
		t.Fatalf("read back %+v at %v shape %s\nparsed %+v at %v shape %s", got, offs, shape, want, wantOffs, wantShape)
	}
	if again := write("sha256:" + string(bytes.Repeat([]byte("b"), 64))); !bytes.Equal(again, first) {
		t.Fatalf("written again, the record differs:\n%x\n%x", again, first)
	}
}
