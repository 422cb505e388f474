package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
)

// A file larger than the inline size is not read whole (it would not fit
// the read-ahead budget) and is summarised like the others: a later sync
// that reads it whole (here, one with the default sizes) reuses it when
// only another file changed.
func TestUnitLargeFileStreamedAndReused(t *testing.T) {
	t.Parallel()
	big := bigPackage("big", 200) // about 40 KiB, over the 16 KiB inline size
	src, st, pl := newUnit(t, pipeline.WithFileBudget(32<<10, 16<<10))
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entry{"configs/big.json", big}, entry{"configs/q.json", onePackage})))
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.FilesReused != 0 {
		t.Fatalf("first sync: files %d, reused %d", res.Files, res.FilesReused)
	}
	src.tag("reg/c:v2", newImage(t, tarLayer(t, entry{"configs/big.json", big}, entry{"configs/q.json", qFixed})))
	pl = pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	if res, err = runOnce(t, pl, "c", "reg/c:v2"); err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.FilesReused != 1 {
		t.Fatalf("second sync: files %d, reused %d; want the large file reused", res.Files, res.FilesReused)
	}
}

// A file larger than the inline size waits on local disk instead of in
// memory, and is reused like a file read whole: a sync with the same
// sizes that finds its bytes published does not parse it again (here it
// does, to compare: WithVerifyReuse).
func TestUnitLargeFileReusedAtTheSameSizes(t *testing.T) {
	t.Parallel()
	big := bigPackage("big", 200) // about 40 KiB, over the 16 KiB inline size
	src, st, pl := newUnit(t, pipeline.WithFileBudget(32<<10, 16<<10))
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entry{"configs/big.json", big}, entry{"configs/q.json", onePackage})))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	src.tag("reg/c:v2", newImage(t, tarLayer(t, entry{"configs/big.json", big}, entry{"configs/q.json", qFixed})))
	pl = pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true),
		pipeline.WithFileBudget(32<<10, 16<<10))
	res, err := runOnce(t, pl, "c", "reg/c:v2")
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.FilesReused != 1 {
		t.Fatalf("second sync: files %d, reused %d; want the large file reused", res.Files, res.FilesReused)
	}
}

// The scratch files large files wait in leave nothing in the temp folder:
// a pod's emptyDir does not fill up sync after sync.
func TestUnitLargeFilesLeaveNoScratchFiles(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	src, _, pl := newUnit(t, pipeline.WithTempDir(tmp), pipeline.WithFileBudget(32<<10, 16<<10))
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entry{"configs/a.json", bigPackage("a", 200)},
		entry{"configs/b.json", bigPackage("b", 200)}, entry{"configs/q.json", onePackage})))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temp folder holds %d entries after the sync, first %s", len(left), left[0].Name())
	}
}

// Observers hear of a sync while it runs, not when it ends, and every
// event names the digest being synced once it is known.
func TestUnitEventsLiveWithDigest(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	img := newImage(t, catalogLayer(t))
	src.tag("reg/c:v1", img)
	release := make(chan struct{})
	src.layer = func(ctx context.Context, data []byte) (*source.LayerReader, error) {
		<-release
		return source.NewLayerReader(bytes.NewReader(data)), nil
	}
	log := &eventLog{}
	done := make(chan error, 1)
	go func() {
		_, err := runOnce(t, pl, "c", "reg/c:v1", log)
		done <- err
	}()
	waitUntil(t, "a Pulling event while the layer is held", func() bool {
		_, ok := log.seen(pipeline.PhasePulling)
		return ok
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, e := range log.events {
		if e.Phase != pipeline.PhaseResolving && e.Digest != img.digest {
			t.Errorf("%s event with digest %q, want %q", e.Phase, e.Digest, img.digest)
		}
	}
}

// A changed file that comes after a reused one is still validated: an
// invalid one is refused, and the catalog published before stays.
func TestUnitChangedFileAfterReusedIsValidated(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	broken := strings.Replace(onePackage, `"entries":[{"name":"q.v1"}]`, `"entries":[{"name":"q.v2"}]`, 1) // an entry with no bundle
	first, _, err := resync(t, src, pl, func(q string) []byte {
		return tarLayer(t, entry{"configs/a.json", bigPackage("a", 3)}, entry{"configs/q.json", q})
	}, broken)
	if se, ok := pipeline.AsError(err); !ok || se.Reason != pipeline.ReasonInvalidCatalog {
		t.Fatalf("err = %v, want InvalidCatalog", err)
	}
	if p, _, err := catalog.Current(context.Background(), st, "c"); err != nil || p.Digest != first.Digest {
		t.Fatalf("served %+v %v, want the first digest %s", p, err, first.Digest)
	}
}

// Pulling events number the layers as they are read, topmost first:
// layer 1 of 2 is the image's last.
func TestUnitPullingEventsNumberLayers(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entry{"configs/a.json", bigPackage("a", 2)}), catalogLayer(t)))
	log := &eventLog{}
	if _, err := runOnce(t, pl, "c", "reg/c:v1", log); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var layers []int
	for _, e := range log.events {
		if e.Phase == pipeline.PhasePulling && (len(layers) == 0 || layers[len(layers)-1] != e.Layer) {
			if e.Layers != 2 {
				t.Fatalf("a Pulling event of %d layers, want 2", e.Layers)
			}
			layers = append(layers, e.Layer)
		}
	}
	if fmt.Sprint(layers) != "[1 2]" {
		t.Fatalf("layers in the order pulled: %v, want [1 2]", layers)
	}
}
