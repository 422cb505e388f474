package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
)

// EndContent completes catalog.jsonl before Commit: lines cannot be added
// after it, and Commit still yields the same complete content.
func TestEndContentThenCommit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	objs := genCatalog(rand.New(rand.NewPCG(3, 3)), 4)
	want := writeCatalog(t, s, "whole", digestOf("a"), objs)

	w := writerWith(t, s, "ended", digestOf("a"), objs)
	defer w.Abort()
	if err := w.EndContent(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("olm.package", "p", "", []byte("{}\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after EndContent = %v, want ErrClosed", err)
	}
	if err := w.EndContent(); !errors.Is(err, ErrClosed) {
		t.Errorf("second EndContent = %v, want ErrClosed", err)
	}
	got, err := w.Commit(ctx, Meta{Ref: want.Ref, Stats: want.Stats, Created: want.Created})
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA256 != want.SHA256 || got.Size != want.Size || got.Objects != want.Objects || got.IndexSize != want.IndexSize {
		t.Errorf("meta after EndContent %+v, want %+v", got, want)
	}
	c, err := OpenDigest(ctx, s, "ended", digestOf("a"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Query(ctx, &b, Query{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), concat(objs, Query{})) {
		t.Error("content after EndContent differs from the lines added")
	}
}

// A writer aborted after EndContent (a catalog refused by validation)
// leaves no catalog.jsonl behind, but never removes complete content of
// the same digest it rewrote.
func TestAbortAfterEndContentDropsContent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	objs := genCatalog(rand.New(rand.NewPCG(4, 4)), 3)
	endAndAbort := func(name, digest string) {
		t.Helper()
		w := writerWith(t, s, name, digest, objs)
		if err := w.EndContent(); err != nil {
			t.Fatal(err)
		}
		// As validation would, give the store time to finish the Put.
		if res := w.collect(ctx); res.err != nil {
			t.Fatal(res.err)
		}
		w.Abort()
	}
	endAndAbort("refused", digestOf("r"))
	list, err := s.List(ctx, contentPrefix("refused", digestOf("r")))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("aborted after EndContent, left %v", list)
	}

	writeCatalog(t, s, "kept", digestOf("k"), objs)
	endAndAbort("kept", digestOf("k"))
	if _, ok, err := HasContent(ctx, s, "kept", digestOf("k")); !ok || err != nil {
		t.Fatalf("complete content gone after a rewrite was aborted: %v, %v", ok, err)
	}
	rc, err := s.Get(ctx, contentPrefix("kept", digestOf("k"))+contentFile, 0, -1)
	if err != nil {
		t.Fatalf("complete content's catalog.jsonl removed: %v", err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, concat(objs, Query{})) {
		t.Error("complete content's catalog.jsonl changed")
	}
}

// A failed write of catalog.jsonl surfaces at Commit after EndContent,
// and nothing is marked complete.
func TestEndContentStoreFailure(t *testing.T) {
	s := &faultyStore{Store: newStore(t), suffix: contentFile, failAfter: 1000}
	ctx := context.Background()
	w, err := NewWriter(ctx, s, "failing", digestOf("f"))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"schema":"olm.package","name":"` + strings.Repeat("n", 500) + `"}` + "\n")
	for range 4 {
		if err := w.Add("olm.package", "", "n", line); err != nil {
			break // the store may fail the pipe already
		}
	}
	_ = w.EndContent() // the failure may show here or at Commit
	if _, err := w.Commit(ctx, Meta{}); !errors.Is(err, errInjected) && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Commit after a failed content write = %v, want the store's error", err)
	}
	if _, ok, _ := HasContent(ctx, s, "failing", digestOf("f")); ok {
		t.Error("failed content marked complete")
	}
	if _, err := s.Stat(ctx, contentPrefix("failing", digestOf("f"))+metaFile); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("meta.json after a failed write: %v", err)
	}
}

// EndContent starts writing the index, GraphQL schema and summary, so
// they are stored while the caller validates; meta.json waits for Commit.
// A summary given after EndContent is ignored.
func TestEndContentWritesTheRest(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	objs := genCatalog(rand.New(rand.NewPCG(5, 5)), 3)
	w := writerWith(t, s, "c", digestOf("s"), objs)
	defer w.Abort()
	w.SetFiles(sectionOf([]byte("summary")))
	if err := w.EndContent(); err != nil {
		t.Fatal(err)
	}
	w.SetFiles(sectionOf([]byte("too late")))
	if r := w.sideWait(ctx); r.err != nil {
		t.Fatal(r.err)
	}
	p := contentPrefix("c", digestOf("s"))
	for _, f := range []string{indexFile, graphqlFile, filesFile} {
		if _, err := s.Stat(ctx, p+f); err != nil {
			t.Errorf("%s not written at EndContent: %v", f, err)
		}
	}
	if _, err := s.Stat(ctx, p+metaFile); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("meta.json before Commit: %v", err)
	}
	m, err := w.Commit(ctx, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := OpenFiles(ctx, s, m)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "summary" {
		t.Fatalf("summary %q", b)
	}
}
