// Package bench measures catalogsync against real servers on loopback.
// Each figure is taken in the same run as its baseline.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const shared = "../../shared/testdata/fbc/community-v4.21/configs"

type fixture struct {
	bin      string
	registry *servers.Registry
	minio    *servers.MinIO
	bucket   string
	images   map[string]image
}

type image struct {
	ref       string
	fbcBytes  int64  // uncompressed FBC size
	layerFile string // the compressed layer, for the gunzip floor
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// setup builds the binary, starts a registry and pushes the catalogs once
// for all benchmarks of the run.
func setup(b *testing.B) *fixture {
	fixOnce.Do(func() {
		if _, err := os.Stat(shared); err != nil {
			fixErr = fmt.Errorf("skipping: %s not found (the shared test data is not in a user's clone)", shared)
			return
		}
		dir, err := os.MkdirTemp("", "catalogsync-bench-*")
		if err != nil {
			fixErr = err
			return
		}
		f := &fixture{images: map[string]image{}}
		f.bin = filepath.Join(dir, "catalogsync")
		out, err := exec.Command("go", "build", "-o", f.bin, "../cmd/catalogsync").CombinedOutput()
		if err != nil {
			fixErr = fmt.Errorf("build: %v\n%s", err, out)
			return
		}
		f.registry = servers.StartRegistry(&keepAlive{B: b})
		f.minio = servers.SharedMinIO(b)
		f.bucket = f.minio.NewBucket(b)
		rc := imagebuild.NewRegClient(f.registry.Host)
		ctx := context.Background()

		gen := filepath.Join(dir, "x16")
		if err := imagebuild.GenerateCopies(shared, gen, 16); err != nil {
			fixErr = err
			return
		}
		tiny, err := filepath.Abs("../testdata/fbc/tiny/configs")
		if err != nil {
			fixErr = err
			return
		}
		for name, src := range map[string]string{"community-v4.21": shared, "generated-x16": gen, "tiny": tiny} {
			r := f.registry.Host + "/bench/" + name + ":v1"
			if _, err := imagebuild.Push(ctx, rc, r, imagebuild.FromDir(src, "/configs")); err != nil {
				fixErr = err
				return
			}
			layer, err := fetchLayer(ctx, rc, r, filepath.Join(dir, name+".tar.gz"))
			if err != nil {
				fixErr = err
				return
			}
			f.images[name] = image{ref: r, fbcBytes: dirSize(src), layerFile: layer}
		}
		fix = f
	})
	if fixErr != nil {
		if strings.HasPrefix(fixErr.Error(), "skipping") {
			b.Skip(fixErr)
		}
		b.Fatal(fixErr)
	}
	return fix
}

// keepAlive lets the registry outlive the first benchmark that starts it:
// its cleanup and temp dirs would otherwise go when that benchmark ends.
// The server dies with the test binary.
type keepAlive struct{ *testing.B }

func (k *keepAlive) Cleanup(func()) {}

func (k *keepAlive) TempDir() string {
	d, err := os.MkdirTemp("", "catalogsync-bench-*")
	if err != nil {
		k.Fatal(err)
	}
	return d
}

// BenchmarkSync syncs each catalog from the registry into a fresh local
// store and a fresh prefix of a MinIO bucket, in the same run.
func BenchmarkSync(b *testing.B) {
	for _, name := range []string{"community-v4.21", "generated-x16"} {
		for _, backend := range []string{"fs", "s3"} {
			b.Run(name+"/"+backend, func(b *testing.B) {
				f := setup(b)
				img := f.images[name]
				floor := gunzipFloor(b, img.layerFile)
				b.SetBytes(img.fbcBytes)
				var rss int64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					args := []string{"sync", "--name", "bench", "--image", img.ref,
						"--plain-http", f.registry.Host, "--no-docker-config", "--log-level", "warn"}
					env := append(os.Environ(), "CATALOGSYNC_PRINT_PEAK_RSS=1")
					if backend == "fs" {
						args = append(args, "--store", b.TempDir())
					} else {
						m := f.minio
						env = append(env, "CATALOGSYNC_S3_BUCKET="+f.bucket, "CATALOGSYNC_S3_ENDPOINT="+m.Endpoint,
							"CATALOGSYNC_S3_REGION="+m.Region, "CATALOGSYNC_S3_PATH_STYLE=true",
							"AWS_ACCESS_KEY_ID="+m.AccessKey, "AWS_SECRET_ACCESS_KEY="+m.SecretKey,
							fmt.Sprintf("CATALOGSYNC_S3_PREFIX=%s-%d-%d", name, b.N, i))
					}
					cmd := exec.Command(f.bin, args...)
					cmd.Env = env
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					cmd.Stdout = io.Discard
					b.StartTimer()
					if err := cmd.Run(); err != nil {
						b.Fatalf("sync: %v\n%s", err, stderr.String())
					}
					b.StopTimer()
					rss = max(rss, peakRSS(b, stderr.String()))
					b.StartTimer()
				}
				b.StopTimer()
				wall := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(floor.Seconds(), "gunzip-floor-s")
				b.ReportMetric(wall/floor.Seconds(), "x-floor")
			})
		}
	}
}

// peakRSS reads the peak the child reported for itself (VmHWM): its
// rusage would include this benchmark's own high-water mark, which Linux
// carries across exec.
func peakRSS(b *testing.B, stderr string) int64 {
	for _, line := range strings.Split(stderr, "\n") {
		if v, ok := strings.CutPrefix(line, "peak-rss-kib "); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return kib << 10
			}
		}
	}
	b.Fatalf("no peak-rss-kib line in:\n%s", stderr)
	return 0
}

// gunzipFloor times `gzip -dc` of the same layer to /dev/null: no sync can
// beat decompressing its input once.
func gunzipFloor(b *testing.B, file string) time.Duration {
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 3; i++ {
		start := time.Now()
		cmd := exec.Command("gzip", "-dc", file)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("gzip -dc: %v", err)
		}
		best = min(best, time.Since(start))
	}
	return best
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
