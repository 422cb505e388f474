package pipeline_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// With WithVerifyReuse, a reused file whose published lines no longer
// match its parse fails the sync instead of publishing them.
func TestUnitVerifyCatchesAlteredContent(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t) // newUnit verifies reuse
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entry{"configs/a.json", bigPackage("a", 3)}, entry{"configs/q.json", onePackage})))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, _, err := catalog.Current(ctx, st, "c")
	if err != nil {
		t.Fatal(err)
	}
	key := "catalogs/c/" + strings.Replace(p.Digest, ":", "-", 1) + "/catalog.jsonl"
	rc, err := st.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	published, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	altered := strings.Replace(string(published), `"example/a:v2"`, `"example/a:v9"`, 1) // same length
	if altered == string(published) {
		t.Fatal("fixture: nothing to alter")
	}
	if _, err := st.Put(ctx, key, strings.NewReader(altered)); err != nil {
		t.Fatal(err)
	}
	src.tag("reg/c:v2", newImage(t, tarLayer(t, entry{"configs/a.json", bigPackage("a", 3)}, entry{"configs/q.json", qFixed})))
	_, err = runOnce(t, pl, "c", "reg/c:v2")
	if se, ok := pipeline.AsError(err); !ok || se.Reason != pipeline.ReasonInternal || !strings.Contains(err.Error(), "incremental check") {
		t.Fatalf("err = %v, want the incremental check's failure", err)
	}
}

// Reused files on either side of a changed one are copied from their own
// places in the published catalog.jsonl (two runs of earlier lines).
func TestUnitReuseAroundAChangedFile(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t) // verifies every reused line against a parse
	_, res, err := resync(t, src, pl, func(q string) []byte {
		return tarLayer(t, entry{"configs/a.json", bigPackage("a", 3)}, entry{"configs/q.json", q}, entry{"configs/z.json", bigPackage("z", 4)})
	}, qFixed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 3 || res.FilesReused != 2 {
		t.Fatalf("files %d, reused %d; want 3 and 2", res.Files, res.FilesReused)
	}
}

// A file with no objects (an empty one) is left out of the summary: a
// record of no lines would make the whole summary unusable, and the next
// sync would reuse nothing.
func TestUnitEmptyFileKeepsSummaryUsable(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	_, res, err := resync(t, src, pl, func(q string) []byte {
		return tarLayer(t, entry{"configs/a.json", bigPackage("a", 3)}, entry{"configs/empty.json", ""}, entry{"configs/q.json", q})
	}, qFixed)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesReused < 1 {
		t.Fatalf("files %d, reused %d; want a.json reused", res.Files, res.FilesReused)
	}
}
