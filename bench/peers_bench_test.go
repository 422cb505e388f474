package bench

import (
	"bytes"
	"context"
	"fmt"
	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/servers"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The peers are the reference binaries beside the repository (opm
// v1.50.0 and catalogd-ref, catalogd's own storage and HTTP handler; see
// ../shared/tools/peers/README.md), measured on the same catalogs, in the
// same run and the same way as catalogsync, so docs/benchmarks-detail.md can
// give each figure as a ratio to its peer. A user's clone has no peers:
// the benchmarks skip.
// peerCatalogs are the sizes the peers are compared on.
var peerCatalogs = []string{"community-v4.21", "generated-x16"}

// peer returns the path of a reference binary, skipping b without it.
func peer(b *testing.B, name string) string { return servers.Peer(b, name) }

// timed runs argv under GNU time and returns its wall time and peak RSS.
// The RSS is the command's own: time forks it from a small process, where
// the benchmark's high-water mark would be carried across exec.
func timed(b *testing.B, argv ...string) (time.Duration, int64) {
	b.Helper()
	gnuTime, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Skip("needs GNU time (/usr/bin/time, Debian package time) for peak RSS")
	}
	cmd := exec.Command(gnuTime, append([]string{"-f", "peak-rss-kib %M"}, argv...)...)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, tail(stderr.String()))
	}
	return wall, peakRSS(b, stderr.String())
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// BenchmarkPeerIngest reads each catalog's FBC folder from local disk
// with every tool that ingests one: `catalogsync index` (validate and
// build the index, the same input as the peers), `opm validate`, `opm
// serve --cache-only` (builds opm's serving cache and exits; inside
// `unshare -n`, as it would listen on all interfaces otherwise) and
// `catalogd-ref store` (what catalogd does with an unpacked catalog).
// Wall time per run and the peak RSS of the runs.
func BenchmarkPeerIngest(b *testing.B) {
	for _, name := range peerCatalogs {
		tools := []struct {
			name string
			argv func(b *testing.B, dir, out string) []string
		}{
			{"catalogsync-index", func(b *testing.B, dir, out string) []string {
				return []string{setup(b).bin, "index", "--out", out, dir}
			}},
			{"opm-validate", func(b *testing.B, dir, _ string) []string { return []string{peer(b, "opm"), "validate", dir} }},
			{"opm-serve-cache", func(b *testing.B, dir, out string) []string {
				return []string{"unshare", "-n", peer(b, "opm"), "serve", dir, "--cache-dir", out, "--cache-only"}
			}},
			{"catalogd-store", func(b *testing.B, dir, out string) []string {
				return []string{peer(b, "catalogd-ref"), "store", "-fbc", dir, "-root", out, "-name", name}
			}},
		}
		for _, tool := range tools {
			b.Run(name+"/"+tool.name, func(b *testing.B) {
				f := setup(b)
				dir, err := peerSource(b, f, name)
				if err != nil {
					b.Fatal(err)
				}
				size := dirSize(dir)
				tool.argv(b, dir, "") // skips now when a binary is missing
				var rss int64
				var wall time.Duration
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					out := filepath.Join(b.TempDir(), "out")
					d, r := timed(b, tool.argv(b, dir, out)...)
					wall += d
					rss = max(rss, r)
				}
				b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N), "ns/op")
				b.ReportMetric(float64(size)/1e6/(wall.Seconds()/float64(b.N)), "MB/s")
				b.ReportMetric(float64(size)/1e6, "catalog-MB")
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			})
		}
	}
}

// peerSource is the catalog's FBC folder, skipping b when it needs the
// shared test data and that is absent.
func peerSource(b *testing.B, f *fixture, name string) (string, error) {
	spec := specOf(name)
	if msg := sharedMissing(); spec.shared && msg != "" {
		b.Skip(msg)
	}
	return f.sourceDir(spec)
}

// peerStore has catalogd-ref store each catalog once into a root that
// catalogd-ref serve then serves.
func peerStore(b *testing.B, f *fixture, name string) string {
	b.Helper()
	root := filepath.Join(f.work, "catalogd-"+name)
	done := root + ".complete"
	if _, err := os.Stat(done); err == nil {
		return root
	}
	dir, err := peerSource(b, f, name)
	if err != nil {
		b.Fatal(err)
	}
	os.RemoveAll(root)
	if out, err := exec.Command(peer(b, "catalogd-ref"), "store", "-fbc", dir, "-root", root, "-name", name).CombinedOutput(); err != nil {
		b.Fatalf("catalogd-ref store %s: %v\n%s", name, err, out)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return root
}

// startPeerServe starts catalogd-ref serve on a stored root, like
// startServe does for catalogsync.
func startPeerServe(b *testing.B, f *fixture, name, firstPath string) (string, time.Duration, func()) {
	b.Helper()
	root := peerStore(b, f, name)
	addr := freeport.Addr(b)
	cmd := exec.Command(peer(b, "catalogd-ref"), "serve", "-root", root, "-addr", addr)
	cmd.SysProcAttr = childAttr()
	return waitFirst(b, cmd, "http://"+addr, firstPath)
}

// BenchmarkPeerColdStart is BenchmarkColdStart for catalogd-ref serve:
// process start to the first answer of the same `?package=` query.
func BenchmarkPeerColdStart(b *testing.B) {
	for _, name := range peerCatalogs {
		b.Run(name+"/catalogd", func(b *testing.B) {
			f := setup(b)
			c := specOf(name)
			path := "/catalogs/" + name + "/api/v1/metas?package=" + c.pkg
			var starts []time.Duration
			for range b.N {
				_, d, stop := startPeerServe(b, f, name, path)
				stop()
				starts = append(starts, d)
			}
			slices.Sort(starts)
			dir, _ := peerSource(b, f, name)
			b.ReportMetric(float64(dirSize(dir))/1e6, "catalog-MB")
			b.ReportMetric(ms(starts[len(starts)/2]), "cold-start-ms")
			b.ReportMetric(ms(starts[len(starts)-1]), "cold-start-max-ms")
		})
	}
}

// BenchmarkPeerMetasWrk is BenchmarkMetasWrk's catalog queries against
// catalogd-ref serve, with the same wrk load. Run with -benchtime 1x.
func BenchmarkPeerMetasWrk(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk not installed (bench/run.sh installs it with apt-get)")
	}
	for _, name := range peerCatalogs {
		c := specOf(name)
		for _, q := range []string{"package=" + c.pkg, "schema=olm.package"} {
			for _, enc := range []string{"identity", "gzip"} {
				b.Run(fmt.Sprintf("%s/catalogd/%s/%s", name, strings.SplitN(q, "=", 2)[0], enc), func(b *testing.B) {
					f := setup(b)
					url, _, stop := startPeerServe(b, f, name, "/catalogs/"+name+"/api/v1/all")
					defer stop()
					runWrk(b, url+"/catalogs/"+name+"/api/v1/metas?"+q, enc, true)
				})
			}
		}
	}
}

var wrkTimeouts = regexp.MustCompile(`Socket errors: connect 0, read 0, write 0, timeout (\d+)`)

// runWrk loads url with the wrk setup of BenchmarkMetasWrk and reports
// req/s and p99. Any error fails catalogsync's run; a peer's requests
// that outlast wrk's timeout are its figures (reported as timeouts), not
// a failure of the harness.
func runWrk(b *testing.B, url, enc string, peer bool) {
	wrkArgs := []string{"-t2", "-c16", "-d" + wrkDuration(), "--latency"}
	if enc == "gzip" {
		wrkArgs = append(wrkArgs, "-H", "Accept-Encoding: gzip")
	}
	b.ResetTimer()
	out, err := exec.CommandContext(context.Background(), "wrk", append(wrkArgs, url)...).CombinedOutput()
	b.StopTimer()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	timeouts := 0.0
	if m := wrkTimeouts.FindSubmatch(out); peer && m != nil {
		timeouts, _ = strconv.ParseFloat(string(m[1]), 64)
	} else if bytes.Contains(out, []byte("Socket errors")) {
		b.Fatalf("errors under load:\n%s", out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) {
		b.Fatalf("errors under load:\n%s", out)
	}
	if peer {
		b.ReportMetric(timeouts, "timeouts")
	}
	rps, p99 := parseWrk(b, string(out))
	b.ReportMetric(rps, "req/s")
	b.ReportMetric(p99, "p99-ms")
}
