package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// BenchmarkStaticLayoutSync is BenchmarkSync on MinIO with the static read
// layout off and on (--static-layout): wall time per sync process and its
// peak RSS.
func BenchmarkStaticLayoutSync(b *testing.B) {
	for _, c := range catalogs {
		for _, layout := range []string{"off", "on"} {
			b.Run(c.name+"/"+layout, func(b *testing.B) {
				f := setup(b)
				img := f.image(b, c.name)
				b.SetBytes(img.fbcBytes)
				var rss int64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					cmd := f.syncCmd(img.ref, store{prefix: fmt.Sprintf("layout-%s-%s-%d-%d", layout, c.name, b.N, i)},
						"CATALOGSYNC_STATIC_LAYOUT="+fmt.Sprint(layout == "on"))
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					b.StartTimer()
					if err := cmd.Run(); err != nil {
						b.Fatalf("sync: %v\n%s", err, stderr.String())
					}
					b.StopTimer()
					rss = max(rss, peakRSS(b, stderr.String()))
					b.StartTimer()
				}
				b.ReportMetric(float64(img.fbcBytes)/1e6, "catalog-MB")
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			})
		}
	}
}

// BenchmarkStaticLayoutReads reads /api/v1/all of a catalog synced with
// the layout, from MinIO directly (the object under the bucket's public
// read policy) and from a `catalogsync serve` replica of the same store,
// on the same machine in the same run: 8 GETs one after the other, then 8
// on each of 4 connections at once. Identity encoding on both, so the
// bytes moved are the catalog's.
func BenchmarkStaticLayoutReads(b *testing.B) {
	for _, c := range catalogs {
		b.Run(c.name, func(b *testing.B) {
			f := setup(b)
			img := f.image(b, c.name)
			prefix := "static-" + c.name
			f.sync(b, img.ref, store{prefix: prefix}, "CATALOGSYNC_STATIC_LAYOUT=true")
			publicPrefix(b, f, prefix)
			cfg := filepath.Join((&keepAlive{b}).TempDir(), "catalogsync.yaml")
			body := fmt.Sprintf("registries:\n- {name: %q, plainHTTP: true}\ncatalogs:\n- {name: bench, image: %q}\n", f.registry.Host, img.ref)
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
			env := append(os.Environ(), s3Env(f, prefix)...)
			replica, _, stop := startServe(b, f, []string{"--config", cfg}, env, "/catalogs/bench/api/v1/all")
			defer stop()
			resp, err := http.Get(replica + "/catalogs/bench/api/v1/all")
			if err != nil {
				b.Fatal(err)
			}
			size, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			for _, from := range []struct{ name, url string }{
				{"minio", f.minio.Endpoint + "/" + f.bucket + "/" + prefix + "/catalogs/bench/api/v1/all"},
				{"replica", replica + "/catalogs/bench/api/v1/all"},
			} {
				for _, conns := range []int{1, 4} {
					b.Run(fmt.Sprintf("%s/conns-%d", from.name, conns), func(b *testing.B) {
						b.SetBytes(size * 8 * int64(conns))
						for i := 0; i < b.N; i++ {
							readAll(b, from.url, conns, 8, size)
						}
						mb := float64(size*8*int64(conns)) / 1e6
						b.ReportMetric(mb/(b.Elapsed().Seconds()/float64(b.N)), "MB/s")
					})
				}
			}
		})
	}
}

// readAll GETs url n times on each of conns clients at once, checking each
// answer's length (size, the catalog.jsonl the replica answered).
func readAll(b *testing.B, url string, conns, n int, size int64) {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 5 * time.Minute}
			for range n {
				resp, err := client.Get(url)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || got != size {
					errs <- fmt.Errorf("GET %s: %d, %d bytes of %d (%v)", url, resp.StatusCode, got, size, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// publicPrefix lets anyone GET the objects under prefix of the run's
// bucket, as a bucket serving a fleet is set up.
func publicPrefix(b *testing.B, f *fixture, prefix string) {
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/%s/*"]}]}`, f.bucket, prefix)
	if _, err := f.minio.Admin().PutBucketPolicy(context.Background(), &awss3.PutBucketPolicyInput{Bucket: aws.String(f.bucket), Policy: aws.String(policy)}); err != nil {
		b.Fatal(err)
	}
}
