package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stores remembers, per catalog and backend, the store a catalog was synced
// into once, so serving benchmarks do not sync again.
var stores = map[string][]string{}

// storeArgs syncs catalog into a fresh store of backend (once per run) and
// returns the arguments and environment that point a command at it.
func storeArgs(b *testing.B, f *fixture, name, backend string) (args, env []string) {
	b.Helper()
	key := name + "/" + backend
	env = os.Environ()
	if backend == "s3" {
		m := f.minio
		env = append(env, "CATALOGSYNC_S3_BUCKET="+f.bucket, "CATALOGSYNC_S3_ENDPOINT="+m.Endpoint,
			"CATALOGSYNC_S3_REGION="+m.Region, "CATALOGSYNC_S3_PATH_STYLE=true",
			"AWS_ACCESS_KEY_ID="+m.AccessKey, "AWS_SECRET_ACCESS_KEY="+m.SecretKey,
			"CATALOGSYNC_S3_PREFIX=serve-"+name)
	} else {
		args = []string{"--store", (&keepAlive{B: b}).TempDir()}
		if a, ok := stores[key]; ok {
			args = a
		}
	}
	if _, ok := stores[key]; ok {
		return args, env
	}
	img := f.images[name]
	cmd := exec.Command(f.bin, append([]string{"sync", "--name", name, "--image", img.ref,
		"--plain-http", f.registry.Host, "--no-docker-config", "--log-level", "warn"}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("sync %s into %s: %v\n%s", name, backend, err, out)
	}
	stores[key] = args
	return args, env
}

func freePort(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe starts `catalogsync serve` on the store and returns its base
// URL, how long it took from exec to the first answer of firstURL (a metas
// query), and a stop function.
func startServe(b *testing.B, f *fixture, args, env []string, firstPath string) (string, time.Duration, func()) {
	b.Helper()
	addr := freePort(b)
	cmd := exec.Command(f.bin, append([]string{"serve", "--addr", addr, "--gc-interval", "0", "--log-level", "warn"}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	url := "http://" + addr
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
			b.Fatalf("serve never answered: %v\n%s", err, stderr.String())
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// BenchmarkColdStart measures process start to the first metas answer: it
// must not depend on the catalog's size.
func BenchmarkColdStart(b *testing.B) {
	for _, name := range []string{"tiny", "generated-x16"} {
		for _, backend := range []string{"fs", "s3"} {
			b.Run(name+"/"+backend, func(b *testing.B) {
				f := setup(b)
				args, env := storeArgs(b, f, name, backend)
				pkg := map[string]string{"tiny": "prometheus", "generated-x16": "kepler-operator-copy8"}[name]
				path := "/catalogs/" + name + "/api/v1/metas?package=" + pkg
				var total time.Duration
				for i := 0; i < b.N; i++ {
					_, d, stop := startServe(b, f, args, env, path)
					stop()
					total += d
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-first-metas")
			})
		}
	}
}

var (
	wrkReqs = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99  = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
)

// BenchmarkMetasWrk drives metas queries with wrk on loopback: 2 threads,
// 16 connections, 10 s, identity and gzip, the setup catalogd's figures
// were taken with. Run with -benchtime 1x.
func BenchmarkMetasWrk(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk not installed (bench/run.sh installs it with apt-get)")
	}
	queries := map[string][]string{
		"community-v4.21": {"package=kepler-operator", "schema=olm.package"},
		"generated-x16":   {"package=kepler-operator-copy8", "schema=olm.package"},
	}
	for _, name := range []string{"community-v4.21", "generated-x16"} {
		for _, backend := range []string{"fs", "s3"} {
			for _, q := range queries[name] {
				for _, enc := range []string{"identity", "gzip"} {
					b.Run(fmt.Sprintf("%s/%s/%s/%s", name, backend, strings.SplitN(q, "=", 2)[0], enc), func(b *testing.B) {
						f := setup(b)
						args, env := storeArgs(b, f, name, backend)
						url, _, stop := startServe(b, f, args, env, "/healthz")
						defer stop()
						target := url + "/catalogs/" + name + "/api/v1/metas?" + q
						wrkArgs := []string{"-t2", "-c16", "-d10s", "--latency"}
						if enc == "gzip" {
							wrkArgs = append(wrkArgs, "-H", "Accept-Encoding: gzip")
						}
						b.ResetTimer()
						out, err := exec.CommandContext(context.Background(), "wrk", append(wrkArgs, target)...).CombinedOutput()
						b.StopTimer()
						if err != nil {
							b.Fatalf("wrk: %v\n%s", err, out)
						}
						if bytes.Contains(out, []byte("Non-2xx")) || bytes.Contains(out, []byte("Socket errors")) {
							b.Fatalf("errors under load:\n%s", out)
						}
						rps, p99 := parseWrk(b, string(out))
						b.ReportMetric(rps, "req/s")
						b.ReportMetric(p99, "p99-ms")
					})
				}
			}
		}
	}
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
