package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
)

// bigPackage is a valid package named name with n bundles in one
// channel: a file of about n × 200 bytes.
func bigPackage(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"s"}`+"\n", name)
	b.WriteString(`{"schema":"olm.channel","package":"` + name + `","name":"s","entries":[`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"%s.v%d"`, name, i)
		if i > 1 {
			fmt.Fprintf(&b, `,"replaces":"%s.v%d"`, name, i-1)
		}
		b.WriteString("}")
	}
	b.WriteString("]}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"schema":"olm.bundle","package":%q,"name":"%s.v%d","image":"example/%s:v%d","properties":[{"type":"olm.package","value":{"packageName":%q,"version":"%d.0.0"}}]}`+"\n",
			name, name, i, name, i, name, i)
	}
	return b.String()
}

// qFixed is onePackage after a release changed its bundle's image.
var qFixed = strings.Replace(onePackage, `"example/q:v1"`, `"example/q:v1-fixed"`, 1)

// resync syncs catalog "c" from layer(onePackage) as reg/c:v1, then from
// layer(q) as reg/c:v2, and returns both results; the second sync's error
// is the caller's to judge.
func resync(t *testing.T, src *fakeSource, pl *pipeline.Pipeline, layer func(q string) []byte, q string) (first, second pipeline.Result, err error) {
	t.Helper()
	src.tag("reg/c:v1", newImage(t, layer(onePackage)))
	if first, err = runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	src.tag("reg/c:v2", newImage(t, layer(q)))
	second, err = runOnce(t, pl, "c", "reg/c:v2")
	return first, second, err
}

// A file larger than the inline size is parsed as it streams (not read
// whole: it would not fit the read-ahead budget) and is summarised like
// the others: a later sync that reads it whole (here, one with the
// default sizes) reuses it when only another file changed.
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

// eventLog records every event an observer hears.
type eventLog struct {
	mu     sync.Mutex
	events []pipeline.Event
}

func (l *eventLog) Observe(e pipeline.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) seen(ph pipeline.Phase) (pipeline.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Phase == ph {
			return e, true
		}
	}
	return pipeline.Event{}, false
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

// meta.json says whether the content was written as the layer streamed:
// a one-layer image in walk order is.
func TestUnitStreamedStat(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := catalog.HasContent(context.Background(), st, "c", res.Digest)
	if err != nil || !ok {
		t.Fatalf("content of %s: %v %v", res.Digest, ok, err)
	}
	if m.Stats["streamed"] != true {
		t.Fatalf("stats %v, want streamed", m.Stats)
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

type sigChecker struct {
	by  string
	err error
}

func (s sigChecker) Check(context.Context, string, string, source.Resolved) (string, error) {
	return s.by, s.err
}

// A registry failure while fetching signatures is retried; a policy
// verdict (or a registry error that no retry can fix) is terminal; a pass
// says what verified the image.
func TestUnitSignatureOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		sig       sigChecker
		reason    pipeline.Reason
		retryable bool
	}{
		{"registry unreachable", sigChecker{err: &source.RegistryError{Op: "referrers", Ref: "reg/c", Err: errors.New("connection refused")}}, pipeline.ReasonRegistry, true},
		{"registry refuses the reference", sigChecker{err: &source.RegistryError{Op: "referrers", Ref: "reg/c", Err: source.ErrInvalidRef}}, pipeline.ReasonSignature, false},
		{"unsigned", sigChecker{err: errors.New("no signature")}, pipeline.ReasonSignature, false},
		{"verified", sigChecker{by: "key rule k"}, "", false},
	} {
		src, _, pl := newUnit(t, pipeline.WithSignatureCheck(c.sig))
		src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
		res, err := runOnce(t, pl, "c", "reg/c:v1")
		if c.reason == "" {
			if err != nil || res.VerifiedBy != "key rule k" {
				t.Errorf("%s: %v, verified by %q", c.name, err, res.VerifiedBy)
			}
			continue
		}
		if se, ok := pipeline.AsError(err); !ok || se.Reason != c.reason || se.Retryable != c.retryable {
			t.Errorf("%s: %v, want %s retryable=%v", c.name, err, c.reason, c.retryable)
		}
	}
}

// Once files arrive out of order the streamed write is dropped, and the
// streamer keeps taking files however many follow (its queue holds 1024):
// the layer is read to its end and the content written after the pull.
func TestUnitManyFilesAfterStreamingIsDropped(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	entries := []entry{{"configs/z.json", bigPackage("z", 1)}} // before a*: not walk order
	for i := range 1100 {
		entries = append(entries, entry{fmt.Sprintf("configs/a%04d.json", i), bigPackage(fmt.Sprintf("a%04d", i), 1)})
	}
	src.tag("reg/c:v1", newImage(t, tarLayer(t, entries...)))
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1101 {
		t.Fatalf("%d files, want 1101", res.Files)
	}
}
