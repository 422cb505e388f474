package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// mirrorEnv is a source registry and a mirror registry, each behind a
// counting proxy, and a registries.conf that mirrors the source.
type mirrorEnv struct {
	src, mir           *servers.Registry
	srcProxy, mirProxy *servers.Proxy
	digest             string
}

func newMirrorEnv(t *testing.T) *mirrorEnv {
	e := &mirrorEnv{src: servers.StartRegistry(t), mir: servers.StartRegistry(t)}
	e.srcProxy, e.mirProxy = servers.NewProxy(t, e.src.URL), servers.NewProxy(t, e.mir.URL)
	img := imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs")
	for _, target := range []string{e.src.Host + "/acme/catalog:v1", e.mir.Host + "/mirror/acme/catalog:v1"} {
		d, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(e.src.Host, e.mir.Host), target, img)
		if err != nil {
			t.Fatal(err)
		}
		e.digest = d
	}
	return e
}

// pipeline syncs through the proxies with registries.conf content conf
// (%[1]s is the source's proxy, %[2]s the mirror's).
func (e *mirrorEnv) pipeline(t *testing.T, conf string) *pipeline.Pipeline {
	path := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(conf, e.srcProxy.Host, e.mirProxy.Host)), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := regconf.Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.New(source.WithHosts(source.Host{Name: e.srcProxy.Host, PlainHTTP: true}, source.Host{Name: e.mirProxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(0, 10*time.Millisecond, 50*time.Millisecond), source.WithRegistriesConf(rc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.srcProxy.ResetCounts()
	e.mirProxy.ResetCounts()
	return pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
}

func (e *mirrorEnv) run(pl *pipeline.Pipeline, image string) (pipeline.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return pl.Run(ctx, catalogspec.Catalog{Name: "cat", Image: catalogspec.ParseImage(image)})
}

func total(p *servers.Proxy) int {
	n := 0
	for _, c := range p.Counts() {
		n += c
	}
	return n
}

const mirrorAll = `
[[registry]]
location = "%[1]s/acme"
[[registry.mirror]]
location = "%[2]s/mirror/acme"
`

func TestMirrorServesPull(t *testing.T) {
	e := newMirrorEnv(t)
	pl := e.pipeline(t, mirrorAll)
	res, err := e.run(pl, e.srcProxy.Host+"/acme/catalog:v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirror != e.mirProxy.Host+"/mirror/acme" || res.Digest != e.digest || res.ResolvedRef != e.srcProxy.Host+"/acme/catalog@"+e.digest {
		t.Fatalf("result %+v", res)
	}
	if n := total(e.srcProxy); n != 0 {
		t.Fatalf("the source got %d requests: %v", n, e.srcProxy.Counts())
	}
	if e.mirProxy.Count(servers.ManifestHEAD) != 1 || e.mirProxy.Count(servers.BlobGET) == 0 {
		t.Fatalf("mirror counts %v", e.mirProxy.Counts())
	}
}

func TestMirrorFallsBackToSource(t *testing.T) {
	e := newMirrorEnv(t)
	pl := e.pipeline(t, mirrorAll)
	e.mirProxy.Inject(servers.Status(503), 0)
	res, err := e.run(pl, e.srcProxy.Host+"/acme/catalog:v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirror != "" || res.Digest != e.digest {
		t.Fatalf("result %+v", res)
	}
	if e.mirProxy.Count(servers.ManifestHEAD) == 0 || e.mirProxy.Count(servers.BlobGET) != 0 {
		t.Fatalf("mirror counts %v", e.mirProxy.Counts())
	}
	if e.srcProxy.Count(servers.ManifestHEAD) != 1 || e.srcProxy.Count(servers.BlobGET) == 0 {
		t.Fatalf("source counts %v", e.srcProxy.Counts())
	}
}

func TestMirrorByDigestOnly(t *testing.T) {
	e := newMirrorEnv(t)
	conf := `
[[registry]]
location = "%[1]s/acme"
mirror-by-digest-only = true
[[registry.mirror]]
location = "%[2]s/mirror/acme"
`
	// A tag: the mirror is never asked.
	pl := e.pipeline(t, conf)
	res, err := e.run(pl, e.srcProxy.Host+"/acme/catalog:v1")
	if err != nil || res.Mirror != "" {
		t.Fatalf("tag: %+v %v", res, err)
	}
	if n := total(e.mirProxy); n != 0 {
		t.Fatalf("the mirror got %d requests for a tag: %v", n, e.mirProxy.Counts())
	}
	// A digest: the mirror serves it and the source is not asked.
	pl = e.pipeline(t, conf)
	res, err = e.run(pl, e.srcProxy.Host+"/acme/catalog@"+e.digest)
	if err != nil || res.Mirror != e.mirProxy.Host+"/mirror/acme" {
		t.Fatalf("digest: %+v %v", res, err)
	}
	if n := total(e.srcProxy); n != 0 {
		t.Fatalf("the source got %d requests for a mirrored digest: %v", n, e.srcProxy.Counts())
	}
	// With the mirror down, a digest falls back to the source; a tag
	// still never reaches the mirror.
	pl = e.pipeline(t, conf)
	e.mir.Stop()
	res, err = e.run(pl, e.srcProxy.Host+"/acme/catalog@"+e.digest)
	if err != nil || res.Mirror != "" || e.srcProxy.Count(servers.ManifestHEAD) != 1 || e.mirProxy.Count(servers.ManifestHEAD) == 0 {
		t.Fatalf("digest, mirror down: %+v %v; source %v mirror %v", res, err, e.srcProxy.Counts(), e.mirProxy.Counts())
	}
}

func TestBlockedRegistry(t *testing.T) {
	e := newMirrorEnv(t)
	pl := e.pipeline(t, `
[[registry]]
location = "%[1]s"
blocked = true
[[registry.mirror]]
location = "%[2]s/mirror"
`)
	_, err := e.run(pl, e.srcProxy.Host+"/acme/catalog:v1")
	se, ok := pipeline.AsError(err)
	if !ok || se.Retryable || !errors.Is(err, source.ErrBlocked) {
		t.Fatalf("blocked: %v", err)
	}
	if total(e.srcProxy)+total(e.mirProxy) != 0 {
		t.Fatalf("a blocked registry was asked: source %v mirror %v", e.srcProxy.Counts(), e.mirProxy.Counts())
	}
}
