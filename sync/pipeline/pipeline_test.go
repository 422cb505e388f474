package pipeline_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/unpack"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const label = "operators.operatorframework.io.index.configs.v1"

type env struct {
	t     *testing.T
	store storage.Store
	reg   *servers.Registry
	proxy *servers.Proxy
	pl    *pipeline.Pipeline
	// fullShape is the GraphQL shape of the last fullSync, as stored.
	fullShape []byte
}

// newEnv starts a real registry behind a counting proxy and a pipeline
// that reads through the proxy into a fresh filesystem store.
func newEnv(t *testing.T, opts ...pipeline.Option) *env {
	t.Helper()
	e := &env{t: t}
	e.reg = servers.StartRegistry(t)
	e.proxy = servers.NewProxy(t, e.reg.URL)
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	e.pl = e.pipeline(opts...)
	return e
}

func (e *env) pipeline(opts ...pipeline.Option) *pipeline.Pipeline {
	src, err := source.New(source.WithHosts(source.Host{Name: e.proxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { src.Close() })
	// Every sync of the suite checks what it reuses (WithVerifyReuse).
	return pipeline.New(src, e.store, append([]pipeline.Option{pipeline.WithTempDir(e.t.TempDir()), pipeline.WithVerifyReuse(true)}, opts...)...)
}

// push writes img to the registry directly (not through the proxy, so the
// proxy counts only what the pipeline does) and returns the proxy ref.
func (e *env) push(repoTag string, img imagebuild.Image) (ref, digest string) {
	e.t.Helper()
	d, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(e.reg.Host), e.reg.Host+"/"+repoTag, img)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.proxy.Host + "/" + repoTag, d
}

func (e *env) sync(name, image string, obs ...pipeline.Observer) (pipeline.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.pl.Run(ctx, catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(image)}, obs...)
}

func (e *env) all(name string) []byte {
	e.t.Helper()
	c, err := catalog.Open(context.Background(), e.store, name)
	if err != nil {
		e.t.Fatal(err)
	}
	rc, err := c.All(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTinyMatchesCatalogd(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs")
	want, err := os.ReadFile(filepath.Join(dir, "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("registry", func(t *testing.T) {
		ref, digest := e.push("tiny/catalog:v1", imagebuild.FromDir(dir, "/configs"))
		res, err := e.sync("tiny", ref)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != pipeline.ActionPublished || res.Digest != digest {
			t.Fatalf("result %+v, want Published %s", res, digest)
		}
		if got := e.all("tiny"); !bytes.Equal(got, want) {
			t.Fatalf("catalog.jsonl differs from catalogd's output:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("ocidir", func(t *testing.T) {
		layout := filepath.Join(t.TempDir(), "layout")
		if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(), "ocidir://"+layout+":v1", imagebuild.FromDir(dir, "/configs")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sync("tiny-ocidir", "ocidir://"+layout+":v1"); err != nil {
			t.Fatal(err)
		}
		if got := e.all("tiny-ocidir"); !bytes.Equal(got, want) {
			t.Fatalf("catalog.jsonl differs from catalogd's output:\n got %q\nwant %q", got, want)
		}
	})
}

// The sample image shipped for the quickstart syncs as it is.
func TestSampleExample(t *testing.T) {
	e := newEnv(t)
	res, err := e.sync("sample", "ocidir://"+filepath.Join(repoRoot(t), "examples/sample-catalog")+":v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Meta.Schemas["olm.package"] != 3 || res.Meta.Schemas["olm.bundle"] != 37 || res.Meta.Schemas["olm.channel"] != 6 {
		t.Fatalf("schemas %v, want 3 packages, 6 channels, 37 bundles", res.Meta.Schemas)
	}
}

func TestCatalogFromRegistry(t *testing.T) {
	sets := []struct{ name, dir string }{
		{"community-3pkgs", filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs")},
		{"community-v4-21", filepath.Join(servers.SharedDir(), "testdata/fbc/community-v4.21/configs")},
	}
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			if _, err := os.Stat(s.dir); err != nil {
				t.Skipf("%s not found: the full catalog is only in the workplace's shared test data", s.dir)
			}
			e := newEnv(t)
			ref, digest := e.push("catalogs/"+s.name+":latest", imagebuild.FromDir(s.dir, "/configs"))
			var phases []pipeline.Phase
			var mu sync.Mutex
			done := make(chan struct{})
			obs := pipeline.ObserverFunc(func(ev pipeline.Event) {
				mu.Lock()
				if len(phases) == 0 || phases[len(phases)-1] != ev.Phase {
					phases = append(phases, ev.Phase)
				}
				mu.Unlock()
				if ev.Terminal() {
					close(done)
				}
			})
			res, err := e.sync(s.name, ref, obs)
			if err != nil {
				t.Fatal(err)
			}
			<-done
			want := []pipeline.Phase{pipeline.PhaseResolving, pipeline.PhasePulling, pipeline.PhaseUnpacking, pipeline.PhaseValidating,
				pipeline.PhaseIndexing, pipeline.PhasePublishing, pipeline.PhasePublished}
			if !slices.Equal(phases, want) {
				t.Errorf("phases %v, want %v", phases, want)
			}
			if res.Action != pipeline.ActionPublished || res.Digest != digest || res.BytesPulled == 0 {
				t.Fatalf("first sync: %+v", res)
			}
			first := e.all(s.name)
			if lines := bytes.Count(first, []byte("\n")); lines != res.Meta.Objects || lines == 0 {
				t.Fatalf("%d lines, meta says %d objects", lines, res.Meta.Objects)
			}

			// Same tag, same digest: one HEAD, nothing else.
			e.proxy.ResetCounts()
			res, err = e.sync(s.name, ref)
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != pipeline.ActionUpToDate {
				t.Fatalf("second sync action %s, want UpToDate", res.Action)
			}
			c := e.proxy.Counts()
			if c[servers.ManifestHEAD] != 1 || c[servers.BlobGET] != 0 || c[servers.ManifestGET] != 0 {
				t.Fatalf("second sync made requests %v, want exactly one manifest HEAD", c)
			}
			poll, err := catalog.LastPoll(context.Background(), e.store, s.name)
			if err != nil || poll.Digest != digest {
				t.Fatalf("last poll %+v, %v", poll, err)
			}
			if !bytes.Equal(e.all(s.name), first) {
				t.Fatal("content changed on an up-to-date sync")
			}
		})
	}
}

// A digest already stored is published again without pulling.
func TestReuseStoredDigest(t *testing.T) {
	e := newEnv(t)
	root := repoRoot(t)
	a := imagebuild.FromDir(filepath.Join(root, "testdata/fbc/tiny/configs"), "/configs")
	b := imagebuild.FromDir(filepath.Join(root, "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs")
	ref, da := e.push("r/c:v1", a)
	if _, err := e.sync("c", ref); err != nil {
		t.Fatal(err)
	}
	_, db := e.push("r/c:v1", b)
	res, err := e.sync("c", ref)
	if err != nil || res.Action != pipeline.ActionPublished || res.Digest != db {
		t.Fatalf("after retag: %+v %v", res, err)
	}
	e.push("r/c:v1", a)
	e.proxy.ResetCounts()
	res, err = e.sync("c", ref)
	if err != nil || res.Action != pipeline.ActionReused || res.Digest != da {
		t.Fatalf("back to the first image: %+v %v", res, err)
	}
	if n := e.proxy.Count(servers.BlobGET); n != 0 {
		t.Fatalf("reuse fetched %d blobs", n)
	}
	// A changed image reference always resolves and publishes anew.
	ref2, _ := e.push("r/other:v9", a)
	res, err = e.sync("c", ref2)
	if err != nil || res.Action != pipeline.ActionReused {
		t.Fatalf("new ref to stored content: %+v %v", res, err)
	}
	ptr, _, _ := catalog.Current(context.Background(), e.store, "c")
	if ptr.Ref != ref2 {
		t.Fatalf("pointer ref %q, want %q", ptr.Ref, ref2)
	}
}

func fbcDir(t *testing.T, files map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, body := range files {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// twoHeads is package p whose channel has two heads (p.v2 replaces
// nothing), with the bundles of incremental_test.go's bundlesP.
const twoHeads = `---
schema: olm.package
name: p
defaultChannel: stable
---
schema: olm.channel
package: p
name: stable
entries:
- name: p.v1
- name: p.v2
` + bundlesP

const onePackage = `{"schema":"olm.package","name":"q","defaultChannel":"s"}
{"schema":"olm.channel","package":"q","name":"s","entries":[{"name":"q.v1"}]}
{"schema":"olm.bundle","package":"q","name":"q.v1","image":"example/q:v1","properties":[{"type":"olm.package","value":{"packageName":"q","version":"1.0.0"}}]}
`

// Each bad image fails with a clear error and the catalog published before
// stays published, byte for byte.
func TestBadInputsKeepPrevious(t *testing.T) {
	e := newEnv(t)
	good := imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs")
	ref, goodDigest := e.push("bad/catalog:v1", good)
	if _, err := e.sync("victim", ref); err != nil {
		t.Fatal(err)
	}
	before := e.all("victim")
	labels := map[string]string{label: "/configs"}
	small := e.pipeline(pipeline.WithLimits(unpack.Limits{MaxBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxEntries: 1000}))

	cases := []struct {
		name      string
		img       imagebuild.Image
		pl        *pipeline.Pipeline
		reason    pipeline.Reason
		retryable bool
		msg       string
	}{
		{"path traversal", imagebuild.Image{Labels: labels, Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Name: "configs/../../x", Body: []byte("x")}}}}}, nil, pipeline.ReasonUnsafeImage, false, "configs/../../x"},
		{"symlink to /etc", imagebuild.Image{Labels: labels, Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Name: "configs/evil.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}}}, nil, pipeline.ReasonUnsafeImage, false, "/etc/passwd"},
		{"file over size cap", imagebuild.Image{Labels: labels, Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Name: "configs/big.json", Body: bytes.Repeat([]byte(" "), 3<<20)}}}}}, small, pipeline.ReasonTooLarge, false, `"configs/big.json" is 3145728 bytes (limit 1048576)`},
		// Each file under the per-file cap, together over the total.
		{"layers over total size cap", imagebuild.Image{Labels: labels, Layers: []imagebuild.Layer{
			{Entries: []imagebuild.Entry{{Name: "configs/a.json", Body: bytes.Repeat([]byte(" "), 700<<10)}}},
			{Entries: []imagebuild.Entry{{Name: "configs/b.json", Body: bytes.Repeat([]byte(" "), 700<<10)}}}}},
			small, pipeline.ReasonTooLarge, false, "more than 1048576 uncompressed bytes"},
		{"two channel heads", imagebuild.FromDir(fbcDir(t, map[string]string{"p/catalog.yaml": twoHeads}), "/configs"), nil,
			pipeline.ReasonInvalidCatalog, false, "multiple channel heads"},
		{"duplicate package", imagebuild.FromDir(fbcDir(t, map[string]string{"a.json": onePackage, "b.json": `{"schema":"olm.package","name":"q","defaultChannel":"s"}`}), "/configs"), nil,
			pipeline.ReasonInvalidCatalog, false, `package "q": duplicate package`},
		{"malformed yaml", imagebuild.FromDir(fbcDir(t, map[string]string{"x.yaml": "schema: olm.package\nname: [unclosed\n"}), "/configs"), nil,
			pipeline.ReasonInvalidCatalog, false, "x.yaml"},
		{"missing label (tag)", imagebuild.Image{Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{{Name: "configs/a.json", Body: []byte(onePackage)}}}}}, nil,
			pipeline.ReasonMissingLabel, true, label},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := e.pl
			if c.pl != nil {
				pl = c.pl
			}
			_, badDigest := e.push("bad/catalog:v1", c.img)
			_, err := pl.Run(context.Background(), catalogspec.Catalog{Name: "victim", Image: catalogspec.ParseImage(ref)})
			se, ok := pipeline.AsError(err)
			if !ok {
				t.Fatalf("err = %v, want a sync error", err)
			}
			if se.Reason != c.reason || se.Retryable != c.retryable || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v (reason %s, retryable %v), want %s retryable=%v containing %q", err, se.Reason, se.Retryable, c.reason, c.retryable, c.msg)
			}
			ptr, _, _ := catalog.Current(context.Background(), e.store, "victim")
			if ptr.Digest != goodDigest {
				t.Fatalf("pointer moved to %s", ptr.Digest)
			}
			if !bytes.Equal(e.all("victim"), before) {
				t.Fatal("served content changed")
			}
			if _, ok, _ := catalog.HasContent(context.Background(), e.store, "victim", badDigest); ok {
				t.Fatal("complete content stored for a bad image")
			}
		})
	}

	// Pinned by digest, a missing label can never be fixed: terminal.
	t.Run("missing label (digest)", func(t *testing.T) {
		_, d := e.push("bad/nolabel:v1", imagebuild.Image{Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{{Name: "configs/a.json", Body: []byte(onePackage)}}}}})
		_, err := e.sync("victim", e.proxy.Host+"/bad/nolabel@"+d)
		se, ok := pipeline.AsError(err)
		if !ok || se.Reason != pipeline.ReasonMissingLabel || se.Retryable {
			t.Fatalf("err = %v, want terminal MissingCatalogLabel", err)
		}
	})
}

// Layers are applied in order with whiteouts, across compressions.
func TestLayersWhiteoutsAndCompressions(t *testing.T) {
	e := newEnv(t)
	a := strings.ReplaceAll(onePackage, `"q"`, `"a"`)
	a = strings.NewReplacer(`"q.v1"`, `"a.v1"`, `"packageName":"q"`, `"packageName":"a"`, `"package":"q"`, `"package":"a"`).Replace(a)
	img := imagebuild.Image{Labels: map[string]string{label: "/configs"}, Layers: []imagebuild.Layer{
		{Compression: imagebuild.Gzip, Entries: []imagebuild.Entry{
			{Name: "configs/a/catalog.json", Body: []byte(a)},
			{Name: "configs/q/catalog.json", Body: []byte("this would not parse")},
		}},
		{Compression: imagebuild.Zstd, Entries: []imagebuild.Entry{
			{Name: "configs/q/.wh.catalog.json"},
			{Name: "configs/q2/catalog.json", Body: []byte(onePackage)},
		}},
		{Compression: imagebuild.None, Entries: []imagebuild.Entry{{Name: "configs/.indexignore", Body: []byte("README.md\n")}, {Name: "configs/README.md", Body: []byte("# not FBC")}}},
	}}
	ref, _ := e.push("layers/c:v1", img)
	res, err := e.sync("layers", ref)
	if err != nil {
		t.Fatal(err)
	}
	got := string(e.all("layers"))
	if res.Meta.Schemas["olm.package"] != 2 || !strings.Contains(got, `"name":"a"`) || !strings.Contains(got, `"name":"q"`) {
		t.Fatalf("catalog %s", got)
	}
}

func TestMultiPlatformIndex(t *testing.T) {
	e := newEnv(t)
	img := imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs")
	img.Platforms = []string{"linux/arm64", "linux/amd64", "linux/s390x"}
	ref, indexDigest := e.push("multi/c:v1", img)
	res, err := e.sync("multi", ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != indexDigest {
		t.Fatalf("digest %s, want the index's %s", res.Digest, indexDigest)
	}
	src, _ := source.New(source.WithHosts(source.Host{Name: e.proxy.Host, PlainHTTP: true}), source.WithDockerConfig(false), source.WithPlatform("linux/ppc64le"))
	defer src.Close()
	_, err = pipeline.New(src, e.store, pipeline.WithVerifyReuse(true)).Run(context.Background(), catalogspec.Catalog{Name: "multi-win", Image: catalogspec.ParseImage(ref)})
	if se, ok := pipeline.AsError(err); !ok || se.Reason != pipeline.ReasonNotCatalogImage || !strings.Contains(err.Error(), "linux/ppc64le") {
		t.Fatalf("err = %v, want NotCatalogImage naming the platform", err)
	}
}

func TestRegistryFaultsAreRetryable(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("faults/c:v1", imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs"))

	e.proxy.Inject(servers.Status(503), 0)
	_, err := e.sync("f", ref)
	if se, ok := pipeline.AsError(err); !ok || !se.Retryable || se.Reason != pipeline.ReasonRegistry {
		t.Fatalf("503: %v", err)
	}
	e.proxy.Clear()

	e.proxy.Inject(servers.TooManyRequests(30*time.Second), 0)
	_, err = e.sync("f", ref)
	se, ok := pipeline.AsError(err)
	if !ok || !se.Retryable || se.RetryAfter < 20*time.Second {
		t.Fatalf("429: %v (retry after %v)", err, se.RetryAfter)
	}
	e.proxy.Clear()

	// A reset in the middle of the layer is retryable too, and the next
	// attempt completes.
	e.proxy.Inject(servers.ResetAfter(100), 1, servers.BlobGET)
	if _, err = e.sync("f", ref); err == nil {
		// The tiny layer may fit in the first 100 bytes' packet; then the
		// reset cannot bite. Anything else must be retryable.
		t.Log("reset did not interrupt the tiny layer")
	} else if se, ok := pipeline.AsError(err); !ok || !se.Retryable {
		t.Fatalf("reset: %v", err)
	}
	e.proxy.Clear()
	if _, err := e.sync("f", ref); err != nil {
		t.Fatal(err)
	}

	// Registry gone entirely.
	e.reg.Stop()
	_, err = e.sync("g", ref)
	if se, ok := pipeline.AsError(err); !ok || !se.Retryable {
		t.Fatalf("registry down: %v", err)
	}
}

// A registry that keeps the connection open and sends nothing (no
// response, or no more of a layer) fails the sync, retryable, after the
// stall timeout instead of holding it at Pulling for ever.
func TestRegistryStall(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("stall/c:v1", imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs"))
	src, err := source.New(source.WithHosts(source.Host{Name: e.proxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond),
		source.WithStallTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pl := pipeline.New(src, e.store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	run := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := pl.Run(ctx, catalogspec.Catalog{Name: "stall", Image: catalogspec.ParseImage(ref)})
		return err
	}
	for _, c := range []struct {
		name  string
		fault servers.Fault
		class string
	}{
		{"no response to the manifest HEAD", servers.StallAfter(-1), servers.ManifestHEAD},
		{"layer stops after 1000 bytes", servers.StallAfter(1000), servers.BlobGET},
	} {
		e.proxy.Inject(c.fault, 0, c.class)
		start := time.Now()
		err := run()
		took := time.Since(start)
		e.proxy.Clear()
		se, ok := pipeline.AsError(err)
		if !ok || !se.Retryable || se.Reason != pipeline.ReasonRegistry || !errors.Is(err, source.ErrStalled) {
			t.Fatalf("%s: %v, want a retryable RegistryError wrapping ErrStalled", c.name, err)
		}
		if took > 30*time.Second {
			t.Fatalf("%s: failed only after %v", c.name, took)
		}
		t.Logf("%s: failed after %v: %v", c.name, took.Round(10*time.Millisecond), err)
	}
	if err := run(); err != nil {
		t.Fatalf("after the stalls: %v", err)
	}
}

func TestInvalidNameAndRef(t *testing.T) {
	e := newEnv(t)
	_, err := e.sync("Not_A_Name", "ocidir://x:v1")
	if se, ok := pipeline.AsError(err); !ok || se.Retryable {
		t.Fatalf("bad name: %v", err)
	}
	_, err = e.sync("ok", "UPPER CASE/not a ref")
	if se, ok := pipeline.AsError(err); !ok || se.Retryable || se.Reason != pipeline.ReasonInvalidRef {
		t.Fatalf("bad ref: %v", err)
	}
	if !errors.Is(err, pipeline.ErrSync) {
		t.Fatal("sync errors wrap ErrSync")
	}
}

// Links and files added by lower layers come out in walk order.
func TestOutputInWalkOrder(t *testing.T) {
	e := newEnv(t)
	other := `{"schema":"custom.thing","name":"x"}` + "\n"
	cases := map[string]imagebuild.Image{
		"symlink": {Labels: map[string]string{label: "/configs"}, Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Name: "configs/a.json", Body: []byte(onePackage)},
			{Name: "configs/y.json", Typeflag: tar.TypeSymlink, Linkname: "z/other.json"},
			{Name: "configs/z/other.json", Body: []byte(other)},
		}}}},
		"lower layer adds a file in between": {Labels: map[string]string{label: "/configs"}, Layers: []imagebuild.Layer{
			{Entries: []imagebuild.Entry{{Name: "configs/y.json", Body: []byte(other)}}},
			{Entries: []imagebuild.Entry{{Name: "configs/a.json", Body: []byte(onePackage)}, {Name: "configs/z/other.json", Body: []byte(other)}}},
		}},
	}
	want := onePackageNormalized + `{"name":"x","schema":"custom.thing"}` + "\n" + `{"name":"x","schema":"custom.thing"}` + "\n"
	for name, img := range cases {
		t.Run(name, func(t *testing.T) {
			slug := strings.ReplaceAll(name, " ", "-")
			ref, _ := e.push("order/"+slug+":v1", img)
			res, err := e.sync("order-"+slug, ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(e.all(res.Catalog)); got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

const onePackageNormalized = `{"defaultChannel":"s","name":"q","schema":"olm.package"}
{"entries":[{"name":"q.v1"}],"name":"s","package":"q","schema":"olm.channel"}
{"image":"example/q:v1","name":"q.v1","package":"q","properties":[{"type":"olm.package","value":{"packageName":"q","version":"1.0.0"}}],"schema":"olm.bundle"}
`

// A pointer at the resolved digest whose content lost its meta.json (an
// interrupted GC, a hand-made delete) is not up to date: the sync pulls
// and publishes again instead of reporting an empty catalog as current.
func TestUnitIncompleteContentIsNotUpToDate(t *testing.T) {
	t.Parallel()
	src, st, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	if _, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, in := range infos {
		if strings.HasSuffix(in.Key, "/meta.json") {
			if err := st.Delete(ctx, in.Key); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d meta.json, want 1", deleted)
	}
	_, opens := src.counts()
	res, err := runOnce(t, pl, "c", "reg/c:v1")
	if _, o := src.counts(); err != nil || res.Action != pipeline.ActionPublished || res.Meta.Objects != 3 || o == opens {
		t.Fatalf("after losing meta.json: %+v %v (opens %d, before %d); want pulled and published again", res, err, o, opens)
	}
}

// pollFails is a store whose writes of the last-poll record fail.
type pollFails struct{ storage.Store }

func (s pollFails) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if strings.HasSuffix(key, "/lastpoll") {
		return storage.Info{}, errors.New("disk full")
	}
	return s.Store.Put(ctx, key, r)
}

// Recording the poll is best effort: a failure is logged and the sync
// still succeeds; a success logs nothing.
func TestUnitRecordPollWarnsOnlyOnFailure(t *testing.T) {
	t.Parallel()
	for _, failing := range []bool{false, true} {
		var logs bytes.Buffer
		src, st := newFakeSource(), newStore(t)
		if failing {
			st = pollFails{st}
		}
		pl := pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()),
			pipeline.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
		for _, want := range []pipeline.Action{pipeline.ActionPublished, pipeline.ActionUpToDate} {
			if res, err := runOnce(t, pl, "c", "reg/c:v1"); err != nil || res.Action != want {
				t.Fatalf("failing poll record %v: %+v, %v; want %s", failing, res, err, want)
			}
		}
		if warned := strings.Count(logs.String(), `msg="record poll"`); warned != map[bool]int{false: 0, true: 2}[failing] {
			t.Errorf("failing poll record %v: %d warnings:\n%s", failing, warned, logs.String())
		}
	}
}
