// Package bench measures catalogsync against real servers on loopback.
// Each figure is taken in the same run as its baseline. bench/run.sh runs
// every benchmark and renders docs/benchmarks.md from their output
// (bench/report).
//
//	go test -run '^$' -bench . -benchtime 3x ./bench
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// sharedDefault is the full community catalog from the workplace's shared
// test data, beside the repository; a user's clone does not have it.
// sharedEnv points elsewhere (a missing path shows what a clone without it
// reports).
const (
	sharedDefault = "../../shared/testdata/fbc/community-v4.21/configs"
	sharedEnv     = "CATALOGSYNC_BENCH_COMMUNITY"
)

func sharedDir() string {
	if d := os.Getenv(sharedEnv); d != "" {
		return d
	}
	// A worktree elsewhere names the shared folder (test/servers.SharedEnv).
	if d := os.Getenv(servers.SharedEnv); d != "" {
		return filepath.Join(d, "testdata", "fbc", "community-v4.21", "configs")
	}
	return sharedDefault
}

// workDirEnv names a folder that outlives one test binary: bench/run.sh
// runs several, and the generated catalogs are written there once.
const workDirEnv = "CATALOGSYNC_BENCH_WORKDIR"

// catalogSpec is one catalog the benchmarks sync and serve.
type catalogSpec struct {
	name    string
	pkg     string // a package of it, for `?package=` queries
	pkgFile string // pkg's catalog file, relative to the catalog's folder
	copies  int    // > 0: that many renamed copies of the shared catalog
	shared  bool   // needs the shared test data
}

// catalogs, smallest first: 2 KB, 13.9 MB, 55 MB and 216 MB of YAML.
var catalogs = []catalogSpec{
	{name: "tiny", pkg: "prometheus", pkgFile: "catalog.yaml"},
	{name: "community-v4.21", pkg: "kepler-operator", pkgFile: "kepler-operator/catalog.yaml", shared: true},
	{name: "generated-x4", pkg: "kepler-operator-copy2", pkgFile: "copy2/kepler-operator/catalog.yaml", copies: 4, shared: true},
	{name: "generated-x16", pkg: "kepler-operator-copy8", pkgFile: "copy8/kepler-operator/catalog.yaml", copies: 16, shared: true},
}

func specOf(name string) catalogSpec {
	for _, c := range catalogs {
		if c.name == name {
			return c
		}
	}
	panic("bench: unknown catalog " + name)
}

type fixture struct {
	bin      string
	registry *servers.Registry
	minio    *servers.MinIO
	bucket   string
	rc       *regclient.RegClient
	work     string

	mu     sync.Mutex
	images map[string]image
}

type image struct {
	ref       string
	fbcBytes  int64  // uncompressed FBC size
	layerFile string // the compressed layer, for the gunzip floor
}

var (
	fixOnce sync.Once
	fix     *fixture // nil after a failed setup
)

// setup builds the binary and starts a registry and MinIO once for all
// benchmarks of the test binary. Catalogs are pushed when first asked for
// (image).
func setup(b testing.TB) *fixture {
	b.Helper()
	fixOnce.Do(func() {
		f := &fixture{images: map[string]image{}, work: workDir(b)}
		f.bin = servers.CatalogsyncBinary(b)
		f.registry = servers.StartRegistry(&keepAlive{b})
		f.minio = servers.SharedMinIO(b)
		f.bucket = f.minio.NewBucket(b)
		f.rc = imagebuild.NewRegClient(f.registry.Host)
		fix = f
	})
	if fix == nil {
		b.Fatal("bench: setup failed in an earlier benchmark")
	}
	return fix
}

// sharedMissing is the skip message of benchmarks that need the shared
// catalog, or "" when it is there.
func sharedMissing() string {
	if _, err := os.Stat(sharedDir()); err != nil {
		where := "../shared/testdata/fbc/community-v4.21 beside the repository"
		if d := os.Getenv(sharedEnv); d != "" {
			where = d + " (" + sharedEnv + ")"
		}
		return "needs the shared community-v4.21 catalog, the workplace's test data that a user's clone lacks: " + where + " not found"
	}
	return ""
}

// image pushes the catalog (generating it first when it is made of copies)
// once per test binary. It skips b when the catalog needs the shared test
// data and it is absent.
func (f *fixture) image(b testing.TB, name string) image {
	b.Helper()
	spec := specOf(name)
	if spec.shared {
		if msg := sharedMissing(); msg != "" {
			b.Skip(msg)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.images[name]; ok {
		return img
	}
	src, err := f.sourceDir(spec)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r := f.registry.Host + "/bench/" + name + ":v1"
	if _, err := imagebuild.Push(ctx, f.rc, r, imagebuild.FromDir(src, "/configs")); err != nil {
		b.Fatal(err)
	}
	layer, err := fetchLayer(ctx, f.rc, r, filepath.Join(f.work, name+".tar.gz"))
	if err != nil {
		b.Fatal(err)
	}
	img := image{ref: r, fbcBytes: dirSize(src), layerFile: layer}
	f.images[name] = img
	return img
}

// sourceDir returns the FBC folder of the catalog, generating copies into
// the work folder when no earlier test binary of the run did.
func (f *fixture) sourceDir(spec catalogSpec) (string, error) {
	switch {
	case spec.copies > 0:
		// The marker lives beside the folder: FromDir would put a file
		// inside it into the image.
		dir := filepath.Join(f.work, spec.name)
		done := dir + ".complete"
		if _, err := os.Stat(done); err == nil {
			return dir, nil
		}
		tmp := dir + ".tmp"
		os.RemoveAll(tmp)
		if err := imagebuild.GenerateCopies(sharedDir(), tmp, spec.copies); err != nil {
			return "", err
		}
		os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
		return dir, os.WriteFile(done, nil, 0o644)
	case spec.shared:
		return sharedDir(), nil
	default:
		return filepath.Abs("../testdata/fbc/" + spec.name + "/configs")
	}
}

var work struct {
	once sync.Once
	dir  string
	own  bool // made by this test binary, removed by TestMain
	err  error
}

// workDir is where the benchmarks keep what outlives one benchmark
// (generated catalogs, the registry's storage, synced stores): the folder
// workDirEnv names, or a temp folder removed when the test binary ends.
func workDir(b testing.TB) string {
	work.once.Do(func() {
		if work.dir = os.Getenv(workDirEnv); work.dir != "" {
			return
		}
		work.dir, work.err = os.MkdirTemp("", "catalogsync-bench-*")
		work.own = work.err == nil
	})
	if work.err != nil {
		b.Fatal(work.err)
	}
	return work.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if work.own {
		os.RemoveAll(work.dir)
	}
	os.Exit(code)
}

// keepAlive lets a server outlive the first benchmark that starts it: its
// cleanup and temp dirs would otherwise go when that benchmark ends. The
// server dies with the test binary; its files are in workDir.
type keepAlive struct{ testing.TB }

func (k *keepAlive) Cleanup(func()) {}

func (k *keepAlive) TempDir() string {
	d, err := os.MkdirTemp(workDir(k.TB), "tmp-*")
	if err != nil {
		k.Fatal(err)
	}
	return d
}

// fetchLayer saves the image's single layer to dst.
func fetchLayer(ctx context.Context, rc *regclient.RegClient, image, dst string) (string, error) {
	r, err := ref.New(image)
	if err != nil {
		return "", err
	}
	m, err := rc.ManifestGet(ctx, r)
	if err != nil {
		return "", err
	}
	im, ok := m.(manifest.Imager)
	if !ok {
		return "", fmt.Errorf("%s is not an image manifest", image)
	}
	layers, err := im.GetLayers()
	if err != nil || len(layers) != 1 {
		return "", fmt.Errorf("%s: want one layer, got %d (%v)", image, len(layers), err)
	}
	br, err := rc.BlobGet(ctx, r, layers[0])
	if err != nil {
		return "", err
	}
	defer br.Close()
	f, err := os.Create(dst)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(f, br); err != nil {
		return "", err
	}
	return dst, f.Close()
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
