package content

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// The large benchmark catalog: 300 packages of an olm.package, 4
// channels and 45 bundles of ~16 KB: 15,000 objects, ~220 MB, the shape
// of a large OperatorHub index.
const (
	bigPackages   = 300
	bigChannels   = 4
	bigBundles    = 45
	bigBundleSize = 16000
)

// discardWriter is a ResponseWriter that counts the body, so benchmarks
// measure the handler and the store, not a network.
type discardWriter struct {
	h    http.Header
	code int
	n    int64
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardWriter) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	d.n += int64(len(p))
	return len(p), nil
}

// serveOnce answers one in-process request and checks it was a 200 of
// want bytes (want < 0: any size).
func serveOnce(b *testing.B, h http.Handler, target string, want int64, headers ...string) {
	req := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.code != http.StatusOK || want >= 0 && w.n != want {
		b.Fatalf("%s: %d, %d bytes (want %d)", target, w.code, w.n, want)
	}
}

// BenchmarkContent runs every benchmark per backend, on catalogs written
// once per backend through catalog.Writer.
func BenchmarkContent(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { benchBackend(b, be.open(b)()) })
	}
}

func benchBackend(b *testing.B, s storage.Store) {
	tiny, _ := tinyObjects(b)
	store(b, s, "tiny", "v1", tiny)
	tinyQ := catalog.Query{Package: "prometheus"}
	tinySize := int64(len(filter(tiny, tinyQ)))

	// Catalogs are written only when a benchmark needs them: "big", and
	// "small" with as many objects but 1 KB bundles (~15 MB), to show a
	// cold start depends on the object count, not on the bytes.
	lazy := func(name string, bundleSize int) func(b *testing.B) catalog.Meta {
		var once sync.Once
		var m catalog.Meta
		return func(b *testing.B) catalog.Meta {
			once.Do(func() {
				start := time.Now()
				ctx := context.Background()
				d := digestOf(name)
				w, err := catalog.NewWriter(ctx, s, name, d)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Abort()
				syntheticObjects(bigPackages, bigChannels, bigBundles, bundleSize, func(o object) {
					if err == nil {
						err = w.Add(o.schema, o.pkg, o.name, o.line)
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				if m, err = w.Commit(ctx, catalog.Meta{}); err != nil {
					b.Fatal(err)
				}
				publish(b, s, name, d)
				b.Logf("%s catalog: %d objects, %d bytes, index %d bytes, written in %v",
					name, m.Objects, m.Size, m.IndexSize, time.Since(start).Round(time.Millisecond))
			})
			if m.Objects == 0 {
				b.Fatalf("%s catalog not written", name)
			}
			return m
		}
	}
	var big catalog.Meta
	bigMeta, smallMeta := lazy("big", bigBundleSize), lazy("small", 1000)
	bigStore := func(b *testing.B) { big = bigMeta(b) }
	pkg := func(i int) string { return fmt.Sprintf("operator-%03d", i%bigPackages) }
	// Every package query returns the same size: an olm.package's
	// channels and bundles.
	pkgBytes := func(bundleSize int) int64 {
		var n int64
		syntheticObjects(1, bigChannels, bigBundles, bundleSize, func(o object) {
			if o.pkg != "" {
				n += int64(len(o.line))
			}
		})
		return n
	}
	pkgSize := pkgBytes(bigBundleSize)

	// Cold start: a new Handler (empty cache) answering its first query.
	b.Run("ColdStart/tiny", func(b *testing.B) {
		for b.Loop() {
			serveOnce(b, New(s), "/catalogs/tiny/api/v1/metas?package=prometheus", tinySize)
		}
	})
	b.Run("ColdStart/big", func(b *testing.B) {
		bigStore(b)
		i := 0
		for b.Loop() {
			serveOnce(b, New(s), "/catalogs/big/api/v1/metas?package="+pkg(i), pkgSize)
			i++
		}
	})
	b.Run("ColdStart/small", func(b *testing.B) {
		smallMeta(b)
		size := pkgBytes(1000)
		i := 0
		for b.Loop() {
			serveOnce(b, New(s), "/catalogs/small/api/v1/metas?package="+pkg(i), size)
			i++
		}
	})
	b.Run("ColdStart/big-HEAD-all", func(b *testing.B) {
		// Pointer, meta and index only: the fixed part of a cold start.
		bigStore(b)
		for b.Loop() {
			req := httptest.NewRequest("HEAD", "/catalogs/big/api/v1/all", nil)
			w := &discardWriter{h: http.Header{}}
			New(s).ServeHTTP(w, req)
			if w.code != 200 {
				b.Fatal(w.code)
			}
		}
	})

	warm := func(b *testing.B, h http.Handler, path func(i int) string, size int64, headers ...string) {
		bigStore(b)
		serveOnce(b, h, path(0), -1, headers...)
		if size >= 0 {
			b.SetBytes(size)
		}
		i := 0
		for b.Loop() {
			serveOnce(b, h, path(i), size, headers...)
			i++
		}
	}
	byPkg := func(i int) string { return "/catalogs/big/api/v1/metas?package=" + pkg(i) }
	bySchema := func(int) string { return "/catalogs/big/api/v1/metas?schema=olm.package" }
	h := New(s)
	b.Run("Warm/package", func(b *testing.B) { warm(b, h, byPkg, pkgSize) })
	b.Run("Warm/package-gzip", func(b *testing.B) { warm(b, h, byPkg, -1, "Accept-Encoding", "gzip") })
	b.Run("Warm/package-ttl0", func(b *testing.B) { warm(b, New(s, WithPointerTTL(0)), byPkg, pkgSize) })
	b.Run("Warm/schema-olm.package", func(b *testing.B) {
		bigStore(b)
		_, n := catalogOf(b, s, "big").Count(catalog.Query{Schema: "olm.package"})
		warm(b, h, bySchema, n)
	})
	b.Run("Warm/package-parallel", func(b *testing.B) {
		bigStore(b)
		serveOnce(b, h, byPkg(0), pkgSize)
		b.SetBytes(pkgSize)
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				serveOnce(b, h, byPkg(i), pkgSize)
				i++
			}
		})
	})
	b.Run("Warm/tiny-package", func(b *testing.B) {
		path := func(int) string { return "/catalogs/tiny/api/v1/metas?package=prometheus" }
		serveOnce(b, h, path(0), tinySize)
		b.SetBytes(tinySize)
		for b.Loop() {
			serveOnce(b, h, path(0), tinySize)
		}
	})
	b.Run("Warm/all-big", func(b *testing.B) {
		bigStore(b)
		warm(b, h, func(int) string { return "/catalogs/big/api/v1/all" }, big.Size)
	})
}

func catalogOf(b *testing.B, s storage.Store, name string) *catalog.Catalog {
	c, err := catalog.Open(context.Background(), s, name)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
