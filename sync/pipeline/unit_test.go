package pipeline_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regclient/regclient/types/errs"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// Unit tests: a fake registry side (fakeSource, an ImageReader) and the
// real filesystem store on a temporary directory.

// entry is one tar entry of a fake layer, under configs/.
type entry struct{ name, body string }

func tarLayer(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// fakeImage is an image of the fake registry: its layers, top last.
type fakeImage struct {
	digest string
	layers [][]byte
}

func newImage(t testing.TB, layers ...[]byte) fakeImage {
	return fakeImage{digest: digestOf(bytes.Join(layers, []byte("|"))), layers: layers}
}

// fakeSource is the registry side: tags point at images; it counts calls
// and can fail or hold layers.
type fakeSource struct {
	mu       sync.Mutex
	tags     map[string]fakeImage
	byDigest map[string]fakeImage
	resolves int
	opens    int
	// layer, if set, replaces the layer stream of OpenLayer (or fails it).
	layer func(ctx context.Context, data []byte) (*source.LayerReader, error)
}

func newFakeSource() *fakeSource {
	return &fakeSource{tags: map[string]fakeImage{}, byDigest: map[string]fakeImage{}}
}

func (f *fakeSource) tag(ref string, img fakeImage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[ref], f.byDigest[img.digest] = img, img
}

func (f *fakeSource) counts() (resolves, opens int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resolves, f.opens
}

func (f *fakeSource) Resolve(ctx context.Context, image string) (source.Resolved, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolves++
	img, ok := f.tags[image]
	if !ok {
		return source.Resolved{}, &source.RegistryError{Op: "resolve", Ref: image, Err: errors.New("manifest unknown")}
	}
	return source.Resolved{Image: image, Digest: img.digest, Ref: image + "@" + img.digest}, nil
}

func (f *fakeSource) Open(ctx context.Context, res source.Resolved) (*source.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	img := f.byDigest[res.Digest]
	out := &source.Image{Resolved: res, ManifestDigest: res.Digest, ConfigsDir: "/configs"}
	for _, l := range img.layers {
		out.Layers = append(out.Layers, source.Layer{Digest: digestOf(l), Size: int64(len(l))})
	}
	return out, nil
}

func (f *fakeSource) OpenLayer(ctx context.Context, img *source.Image, i int, progress func(int64)) (*source.LayerReader, error) {
	data := f.byDigest[img.Resolved.Digest].layers[i]
	if f.layer != nil {
		return f.layer(ctx, data)
	}
	if progress != nil {
		progress(int64(len(data)))
	}
	return source.NewLayerReader(bytes.NewReader(data)), nil
}

func newStore(t testing.TB) storage.Store {
	t.Helper()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newUnit(t *testing.T, opts ...pipeline.Option) (*fakeSource, storage.Store, *pipeline.Pipeline) {
	t.Helper()
	src, st := newFakeSource(), newStore(t)
	return src, st, pipeline.New(src, st, append([]pipeline.Option{pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true)}, opts...)...)
}

func runOnce(t *testing.T, pl *pipeline.Pipeline, name, image string, obs ...pipeline.Observer) (pipeline.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return pl.Run(ctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(image)}, obs...)
}

// phaseLog records the phases an observer hears, and when the sync ended.
type phaseLog struct {
	mu     sync.Mutex
	phases []pipeline.Phase
	waits  []pipeline.Wait
	done   chan struct{}
}

func newPhaseLog() *phaseLog { return &phaseLog{done: make(chan struct{})} }

func (l *phaseLog) Observe(e pipeline.Event) {
	l.mu.Lock()
	if n := len(l.phases); n == 0 || l.phases[n-1] != e.Phase {
		l.phases = append(l.phases, e.Phase)
	}
	l.mu.Unlock()
	if e.Terminal() {
		close(l.done)
	}
}

func (l *phaseLog) ObserveWait(w pipeline.Wait) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits = append(l.waits, w)
}

func (l *phaseLog) waitedOn(holder string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.waits, func(w pipeline.Wait) bool {
		return w.Reason == pipeline.WaitLease && w.Holder == holder && !w.Over
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func catalogLayer(t testing.TB) []byte {
	return tarLayer(t, entry{"configs/q/catalog.json", onePackage})
}

func TestUnitPhasesInOrder(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	log := newPhaseLog()
	res, err := runOnce(t, pl, "c", "reg/c:v1", log)
	if err != nil {
		t.Fatal(err)
	}
	<-log.done
	want := []pipeline.Phase{pipeline.PhaseResolving, pipeline.PhasePulling, pipeline.PhaseUnpacking, pipeline.PhaseValidating,
		pipeline.PhaseIndexing, pipeline.PhasePublishing, pipeline.PhasePublished}
	if !slices.Equal(log.phases, want) {
		t.Fatalf("phases %v, want %v", log.phases, want)
	}
	if res.Action != pipeline.ActionPublished || res.Meta.Objects != 3 || res.BytesPulled == 0 {
		t.Fatalf("result %+v", res)
	}
	for _, ph := range want[:6] {
		if _, ok := res.Phases[ph]; !ok {
			t.Errorf("no duration for phase %s", ph)
		}
	}
	ptr, _, err := catalog.Current(context.Background(), st, "c")
	if err != nil || ptr.Digest != res.Digest || ptr.Ref != "reg/c:v1" {
		t.Fatalf("pointer %+v, %v", ptr, err)
	}
}

// The published digest is not pulled again; content stored under a digest
// is published again without pulling.
func TestUnitUpToDateAndReused(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	a := newImage(t, catalogLayer(t))
	b := newImage(t, tarLayer(t, entry{"configs/other.json", `{"schema":"custom.thing","name":"x"}`}))
	src.tag("reg/c:v1", a)
	if res, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil || res.Action != pipeline.ActionPublished {
		t.Fatalf("first: %+v %v", res, err)
	}
	_, opens := src.counts()
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if _, o := src.counts(); err != nil || res.Action != pipeline.ActionUpToDate || o != opens {
		t.Fatalf("same digest: %+v %v (%d opens, want %d)", res, err, o, opens)
	}
	if poll, err := catalog.LastPoll(context.Background(), st, "c"); err != nil || poll.Digest != a.digest {
		t.Fatalf("last poll %+v %v", poll, err)
	}
	src.tag("reg/c:v1", b)
	if res, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil || res.Action != pipeline.ActionPublished || res.Digest != b.digest {
		t.Fatalf("retagged: %+v %v", res, err)
	}
	src.tag("reg/c:v1", a)
	_, opens = src.counts()
	res, err = runOnce(t, pl, "c", "reg/c:v1")
	if _, o := src.counts(); err != nil || res.Action != pipeline.ActionReused || res.Digest != a.digest || o != opens {
		t.Fatalf("back to the first: %+v %v (%d opens, want %d)", res, err, o, opens)
	}
	ptr, _, _ := catalog.Current(context.Background(), st, "c")
	if ptr.Digest != a.digest {
		t.Fatalf("pointer at %s, want %s", ptr.Digest, a.digest)
	}
}

// A path given twice in one layer is the later entry, as extracting the
// layer would leave it, whichever parse ends last.
func TestUnitPathTwiceKeepsLater(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t, pipeline.WithWorkers(4))
	src.tag("reg/c:v1", newImage(t, tarLayer(t,
		entry{"configs/q/catalog.json", "this would not parse"},
		entry{"configs/q/catalog.json", onePackage})))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatalf("the earlier entry was used: %v", err)
	}
	c, err := catalog.Open(context.Background(), st, "c")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != onePackageNormalized {
		t.Fatalf("catalog %q", got)
	}
}

// errAfter is a reader that returns data, then err instead of EOF.
func errAfter(data []byte, err error) io.Reader {
	return io.MultiReader(bytes.NewReader(data), &failing{err})
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

// Layer trouble is classified: transfer trouble (a reset, a digest that
// does not match at the end of the stream) is retryable; content that can
// never be a catalog is terminal.
func TestUnitLayerErrorsClassified(t *testing.T) {
	t.Parallel()
	reset := &source.RegistryError{Op: "get layer", Ref: "reg/c", Err: io.ErrUnexpectedEOF}
	cases := []struct {
		name      string
		layer     func(ctx context.Context, data []byte) (*source.LayerReader, error)
		entries   []entry
		reason    pipeline.Reason
		retryable bool
		opts      []pipeline.Option
	}{
		{"open fails", func(context.Context, []byte) (*source.LayerReader, error) { return nil, reset }, nil, pipeline.ReasonRegistry, true, nil},
		{"reset mid-layer", func(_ context.Context, d []byte) (*source.LayerReader, error) {
			return source.NewLayerReader(errAfter(d[:700], reset)), nil
		}, nil, pipeline.ReasonRegistry, true, nil},
		{"digest mismatch at the end", func(_ context.Context, d []byte) (*source.LayerReader, error) {
			return source.NewLayerReader(errAfter(d, fmt.Errorf("verify layer: %w", errs.ErrDigestMismatch))), nil
		}, nil, pipeline.ReasonRegistry, true, nil},
		{"unknown compression", func(context.Context, []byte) (*source.LayerReader, error) {
			return nil, fmt.Errorf("layer: %w", source.ErrCompression)
		}, nil, pipeline.ReasonNotCatalogImage, false, nil},
		{"path traversal", nil, []entry{{"configs/../../x", "x"}}, pipeline.ReasonUnsafeImage, false, nil},
		{"no catalog directory", nil, []entry{{"elsewhere/a.json", onePackage}}, pipeline.ReasonUnsafeImage, false, nil},
		{"invalid catalog", nil, []entry{{"configs/a.json", "{not json"}}, pipeline.ReasonInvalidCatalog, false, nil},
		{"file over the cap", nil, []entry{{"configs/a.json", onePackage}}, pipeline.ReasonTooLarge, false,
			[]pipeline.Option{pipeline.WithLimits(unpack.Limits{MaxBytes: 1 << 20, MaxFileBytes: 10, MaxEntries: 10})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src, st, pl := newUnit(t, c.opts...)
			layer := catalogLayer(t)
			if c.entries != nil {
				layer = tarLayer(t, c.entries...)
			}
			src.tag("reg/c:v1", newImage(t, layer))
			src.layer = c.layer
			_, err := runOnce(t, pl, "c", "reg/c:v1")
			se, ok := pipeline.AsError(err)
			if !ok || se.Reason != c.reason || se.Retryable != c.retryable {
				t.Fatalf("err = %v, want %s retryable=%v", err, c.reason, c.retryable)
			}
			if _, _, err := catalog.Current(context.Background(), st, "c"); !errors.Is(err, storage.ErrNotExist) {
				t.Fatalf("a pointer after a failed sync: %v", err)
			}
		})
	}
}

// otherReplica is a lease holder that is not this process.
var otherReplica = catalog.LeaseHolder{Replica: "other", Instance: "other-instance"}

// While another replica holds the lease, a sync waits (reporting on whom)
// without asking the registry anything, and goes on once it is released.
func TestUnitLeaseWaited(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	l, _, err := catalog.AcquireLease(context.Background(), st, "c", "", otherReplica, 0)
	if err != nil {
		t.Fatal(err)
	}
	log := newPhaseLog()
	type outcome struct {
		res pipeline.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := pl.Run(context.Background(), catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage("reg/c:v1")}, log)
		done <- outcome{res, err}
	}()
	waitUntil(t, "a wait on the other replica", func() bool { return log.waitedOn("other") })
	if r, _ := src.counts(); r != 0 {
		t.Fatalf("%d resolves while another replica held the lease", r)
	}
	l.Release(context.Background())
	o := <-done
	if o.err != nil || o.res.Action != pipeline.ActionPublished {
		t.Fatalf("after the release: %+v %v", o.res, o.err)
	}
}

// A sync run under a lease its caller holds does not take it again, so
// the caller's lease stays live after the sync.
func TestUnitLeaseHeldByCaller(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	ctx, release, err := pl.HoldLease(context.Background(), "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage("reg/c:v1")}); err != nil {
		t.Fatal(err)
	}
	rec, err := catalog.ReadLease(context.Background(), st, "c")
	if err != nil || !rec.Expires.After(time.Now()) || ctx.Err() != nil {
		t.Fatalf("the caller's lease after the sync: %+v %v (ctx %v)", rec, err, context.Cause(ctx))
	}
}

// A lease lost mid-pull (another replica took it over) fails the sync as
// a retryable storage error naming the loss, not as a cancellation.
func TestUnitLeaseLost(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t, pipeline.WithLeaseTTL(300*time.Millisecond))
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	pulling := make(chan struct{})
	src.layer = func(ctx context.Context, _ []byte) (*source.LayerReader, error) {
		close(pulling)
		<-ctx.Done()
		return nil, &source.RegistryError{Op: "get layer", Ref: "reg/c", Err: ctx.Err()}
	}
	done := make(chan error, 1)
	go func() {
		_, err := pl.Run(context.Background(), catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage("reg/c:v1")})
		done <- err
	}()
	<-pulling
	// Another replica overwrites the lease: the next renewal fails.
	if _, err := st.Put(context.Background(), "catalogs/c/syncing", strings.NewReader(`{"replica":"other","instance":"x"}`)); err != nil {
		t.Fatal(err)
	}
	err := <-done
	se, ok := pipeline.AsError(err)
	if !ok || se.Reason != pipeline.ReasonStorage || !se.Retryable || !errors.Is(err, catalog.ErrLeaseLost) {
		t.Fatalf("err = %v, want a retryable StorageError wrapping ErrLeaseLost", err)
	}
}

// A lease the caller holds for one catalog is no lease for another: a
// sync of the other still waits for the replica holding its lease.
func TestUnitLeaseOfAnotherCatalogIsNoLease(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/b:v1", newImage(t, catalogLayer(t)))
	ctx, release, err := pl.HoldLease(context.Background(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	l, _, err := catalog.AcquireLease(context.Background(), st, "b", "", otherReplica, 0)
	if err != nil {
		t.Fatal(err)
	}
	log := newPhaseLog()
	done := make(chan error, 1)
	go func() {
		_, err := pl.Run(ctx, catalogspec.Catalog{Name: "b", Image: catalogspec.ParseImage("reg/b:v1")}, log)
		done <- err
	}()
	waitUntil(t, "a wait on the replica holding b's lease", func() bool { return log.waitedOn("other") })
	if r, _ := src.counts(); r != 0 {
		t.Fatalf("%d resolves of b while another replica held its lease", r)
	}
	l.Release(context.Background())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

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
