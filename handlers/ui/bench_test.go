package ui

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// The 220 MB catalog of bench/: 16 renamed copies of the shared
// community-v4.21, generated once into CATALOGSYNC_BENCH_WORKDIR (shared
// with bench/run.sh) or a temp folder, then synced through the real
// pipeline into a local store.
var large struct {
	once  sync.Once
	store storage.Store
	skip  string
	err   error
}

func largeStore(b *testing.B) storage.Store {
	b.Helper()
	large.once.Do(func() {
		shared := sharedDir(b)
		if shared == "" {
			large.skip = "needs ../shared/testdata/fbc/community-v4.21 beside the repository (or CATALOGSYNC_SHARED)"
			return
		}
		work := os.Getenv("CATALOGSYNC_BENCH_WORKDIR")
		if work == "" {
			work, large.err = os.MkdirTemp("", "catalogsync-ui-bench-*")
			if large.err != nil {
				return
			}
		}
		dir := filepath.Join(work, "generated-x16")
		if _, err := os.Stat(dir + ".complete"); err != nil {
			os.RemoveAll(dir)
			if large.err = imagebuild.GenerateCopies(filepath.Join(shared, "testdata/fbc/community-v4.21/configs"), dir, 16); large.err != nil {
				return
			}
			os.WriteFile(dir+".complete", nil, 0o644)
		}
		st, err := fs.New(filepath.Join(work, "ui-store"))
		if large.err = err; err != nil {
			return
		}
		large.store = st
		if _, err := catalog.Open(b.Context(), st, "generated-x16"); err == nil {
			return // synced by an earlier run
		}
		syncDir(b, st, "generated-x16", dir)
	})
	if large.skip != "" {
		b.Skip(large.skip)
	}
	if large.err != nil {
		b.Fatal(large.err)
	}
	return large.store
}

// timings records how long the handler took for each request: server
// time, from the request reaching the handler to the last byte written.
type timings struct {
	mu sync.Mutex
	d  []time.Duration
}

func (t *timings) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		d := time.Since(start)
		t.mu.Lock()
		t.d = append(t.d, d)
		t.mu.Unlock()
	})
}

func (t *timings) report(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.d) == 0 {
		return
	}
	s := slices.Clone(t.d)
	slices.Sort(s)
	q := func(p float64) float64 {
		return float64(s[min(int(p*float64(len(s))), len(s)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(s[len(s)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(len(s))/float64(b.N), "pages/op")
	b.ReportMetric(rssMB("VmRSS"), "rss-MB")
	b.ReportMetric(rssMB("VmHWM"), "peak-rss-MB")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMB reads this process's resident set from /proc (0 elsewhere).
func rssMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkPages serves the pages of the 220 MB catalog from a fresh
// handler and reports the server time per page (p50/p99 over every page
// of the kind) and the process RSS while serving them.
//
//	CATALOGSYNC_SHARED=/work/shared go test -run '^$' -bench Pages -benchtime 3x ./handlers/ui
func BenchmarkPages(b *testing.B) {
	store := largeStore(b)
	c, err := catalog.Open(b.Context(), store, "generated-x16")
	if err != nil {
		b.Fatal(err)
	}
	var pkgs, bundles []string
	c.Objects(catalog.Query{Schema: "olm.package"}, func(o catalog.Object) bool { pkgs = append(pkgs, o.Name); return true })
	c.Objects(catalog.Query{Schema: "olm.bundle"}, func(o catalog.Object) bool {
		if len(bundles) < 2000 {
			bundles = append(bundles, bundleURL(c.Name, o.Package, o.Name))
		}
		return true
	})
	var pkgPages, catPages []string
	for _, p := range pkgs {
		pkgPages = append(pkgPages, packageURL(c.Name, p))
	}
	for i := 1; i <= (len(pkgs)+pageSize-1)/pageSize; i++ {
		catPages = append(catPages, catalogURL(c.Name)+"?page="+strconv.Itoa(i))
	}
	b.Logf("%s: %d objects, %.0f MB, %d packages", c.Name, c.Meta.Objects, float64(c.Meta.Size)/(1<<20), len(pkgs))
	set := engine.StaticCatalogs{{Name: c.Name, Image: catalogspec.ParseImage("example.test/generated-x16:v1")}}
	kinds := []struct {
		name  string
		paths []string
		fresh bool // a new handler for each op: nothing cached
	}{
		{"catalogs", []string{Prefix + "/"}, false},
		{"catalog-first-visit", catPages, true},
		{"catalog", catPages, false},
		{"search", []string{catalogURL(c.Name) + "?q=v0.2", catalogURL(c.Name) + "?q=operator-copy1"}, false},
		{"package", pkgPages, false},
		{"bundle", bundles, false},
		{"mermaid", []string{packageURL(c.Name, pkgs[len(pkgs)/2]) + "graph.mmd"}, false},
		// The store holds one digest: compared with itself, the cost is the
		// same (both streamed and hashed), the answer empty. Not cached:
		// a fresh handler each time.
		{"changes-first-visit", []string{catalogURL(c.Name) + "changes?from=" + c.Meta.Digest}, true},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var tm timings
			var srv *httptest.Server
			serve := func() {
				if srv != nil {
					srv.Close()
				}
				r := chi.NewRouter()
				New(store, set, WithLogger(quietLogger())).Mount(r)
				srv = httptest.NewServer(tm.wrap(r))
			}
			serve()
			defer func() { srv.Close() }()
			for _, p := range k.paths { // warm the page cache and the index
				get(b, srv.URL+p)
			}
			tm.d = nil
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				if k.fresh {
					b.StopTimer()
					serve()
					b.StartTimer()
				}
				for _, p := range k.paths {
					if resp, _ := get(b, srv.URL+p); resp.StatusCode != 200 {
						b.Fatalf("%s: %d", p, resp.StatusCode)
					}
				}
			}
			b.StopTimer()
			// CPU of the whole process (server and client) per page: an
			// upper bound of the server's work that a busy machine does
			// not inflate as it does wall-clock times.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N*len(k.paths)), "cpu-ms/page")
			tm.report(b)
		})
	}
}
