package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/servers"
)

// stores remembers, per catalog and backend, the store a catalog was synced
// into once, so serving benchmarks do not sync again.
var stores = map[string][]string{}

// storeArgs syncs catalog into a fresh store of backend (once per run) and
// returns the arguments and environment that point a command at it.
func storeArgs(b *testing.B, f *fixture, name, backend string) (args, env []string) {
	b.Helper()
	img := f.image(b, name)
	key := name + "/" + backend
	env = os.Environ()
	if backend == "s3" {
		env = append(env, s3Env(f, "serve-"+name)...)
	}
	if a, ok := stores[key]; ok {
		return a, env
	}
	if backend == "fs" {
		args = []string{"--store", (&keepAlive{b}).TempDir()}
	}
	cmd := exec.Command(f.bin, append([]string{"sync", "--name", name, "--image", img.ref,
		"--plain-http", f.registry.Host, "--no-docker-config", "--log-level", "warn"}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("sync %s into %s: %v\n%s", name, backend, err, out)
	}
	// serve answers only for the catalogs it is configured with.
	cfg := filepath.Join((&keepAlive{b}).TempDir(), "catalogsync.yaml")
	body := fmt.Sprintf("registries:\n- {name: %q, plainHTTP: true}\ncatalogs:\n- {name: %q, image: %q}\n", f.registry.Host, name, img.ref)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	args = append(slices.Clip(args), "--config", cfg)
	stores[key] = args
	return args, env
}

// startServe starts `catalogsync serve` on the store and returns its base
// URL, how long it took from exec to the first answer of firstURL (a metas
// query), and a stop function.
func startServe(b *testing.B, f *fixture, args, env []string, firstPath string) (string, time.Duration, func()) {
	b.Helper()
	addr := freeport.Addr(b)
	cmd := exec.Command(f.bin, append([]string{"serve", "--addr", addr, "--gc-interval", "0", "--log-level", "warn"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	return waitFirst(b, cmd, "http://"+addr, firstPath)
}

// waitFirst starts cmd, a server at url, and returns how long it took from
// exec to the first answer of firstPath, and a stop function.
func waitFirst(b *testing.B, cmd *exec.Cmd, url, firstPath string) (string, time.Duration, func()) {
	b.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	deadline := start.Add(30 * time.Second)
	for {
		resp, err := client.Get(url + firstPath)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, time.Since(start), stop
			}
			stop()
			b.Fatalf("first answer %d\n%s", resp.StatusCode, stderr.String())
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("server never answered: %v\n%s", err, stderr.String())
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// BenchmarkColdStart measures process start to the first metas answer
// (`?package=`) for each catalog size, the median of b.N starts: it must
// not depend on the size. The smallest catalog is the baseline. Each
// store is read by `catalogsync serve` ({fs,s3}) and by
// catalogsync-reader ({fs,s3}-reader).
func BenchmarkColdStart(b *testing.B) {
	for _, c := range catalogs {
		for _, backend := range []string{"fs", "s3", "fs-reader", "s3-reader"} {
			b.Run(c.name+"/"+backend, func(b *testing.B) {
				f := setup(b)
				reader := strings.HasSuffix(backend, "-reader")
				args, env := storeArgs(b, f, c.name, strings.TrimSuffix(backend, "-reader"))
				start := startServe
				if reader {
					start = startReader
				}
				path := "/catalogs/" + c.name + "/api/v1/metas?package=" + c.pkg
				var starts []time.Duration
				for i := 0; i < b.N; i++ {
					_, d, stop := start(b, f, args, env, path)
					stop()
					starts = append(starts, d)
				}
				slices.Sort(starts)
				b.ReportMetric(float64(f.image(b, c.name).fbcBytes)/1e6, "catalog-MB")
				b.ReportMetric(ms(starts[len(starts)/2]), "cold-start-ms")
				b.ReportMetric(ms(starts[len(starts)-1]), "cold-start-max-ms")
			})
		}
	}
}

// startReader is startServe for catalogsync-reader, which serves every
// catalog of its store and takes no catalogs file.
func startReader(b *testing.B, f *fixture, args, env []string, firstPath string) (string, time.Duration, func()) {
	b.Helper()
	if i := slices.Index(args, "--config"); i >= 0 {
		args = slices.Delete(slices.Clone(args), i, i+2)
	}
	addr := freeport.Addr(b)
	cmd := exec.Command(servers.ReaderBinary(b), append([]string{"--addr", addr, "--log-level", "warn"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	return waitFirst(b, cmd, "http://"+addr, firstPath)
}

// wrkDuration is how long each wrk run lasts: 10 s, or
// CATALOGSYNC_BENCH_WRK_DURATION (bench/run.sh's quick mode shortens it).
func wrkDuration() string {
	if d := os.Getenv("CATALOGSYNC_BENCH_WRK_DURATION"); d != "" {
		return d
	}
	return "10s"
}

var (
	wrkReqs = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99  = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
)

// BenchmarkMetasWrk drives metas queries with wrk on loopback: 2 threads,
// 16 connections, 10 s, identity and gzip, the setup catalogd's figures
// were taken with. The baseline is /healthz on the same kind of process,
// the most this HTTP stack answers with no catalog work. Run with
// -benchtime 1x: a wrk run is itself the measurement.
func BenchmarkMetasWrk(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk not installed (bench/run.sh installs it with apt-get)")
	}
	for _, backend := range []string{"fs", "s3"} {
		b.Run("healthz/"+backend, func(b *testing.B) {
			f := setup(b)
			args, env := storeArgs(b, f, "tiny", backend)
			wrk(b, f, args, env, "/healthz", "identity")
		})
	}
	for _, c := range []catalogSpec{specOf("community-v4.21"), specOf("generated-x16")} {
		for _, backend := range []string{"fs", "s3"} {
			for _, q := range []string{"package=" + c.pkg, "schema=olm.package"} {
				for _, enc := range []string{"identity", "gzip"} {
					b.Run(fmt.Sprintf("%s/%s/%s/%s", c.name, backend, strings.SplitN(q, "=", 2)[0], enc), func(b *testing.B) {
						f := setup(b)
						args, env := storeArgs(b, f, c.name, backend)
						wrk(b, f, args, env, "/catalogs/"+c.name+"/api/v1/metas?"+q, enc)
					})
				}
			}
		}
	}
}

// wrk starts `catalogsync serve` on the store and loads path with wrk.
func wrk(b *testing.B, f *fixture, args, env []string, path, enc string) {
	url, _, stop := startServe(b, f, args, env, "/healthz")
	defer stop()
	runWrk(b, url+path, enc, false)
}

func parseWrk(b *testing.B, out string) (rps, p99ms float64) {
	m := wrkReqs.FindStringSubmatch(out)
	l := wrkP99.FindStringSubmatch(out)
	if m == nil || l == nil {
		b.Fatalf("cannot read wrk output:\n%s", out)
	}
	rps, _ = strconv.ParseFloat(m[1], 64)
	p99ms, _ = strconv.ParseFloat(l[1], 64)
	switch l[2] {
	case "us":
		p99ms /= 1000
	case "s":
		p99ms *= 1000
	}
	return rps, p99ms
}
