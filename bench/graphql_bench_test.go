package bench

import (
	"bytes"
	"fmt"
	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/servers"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// catalogdRef is catalogd's own storage and handler (servers.Peer).
func catalogdRef(b *testing.B) string { return servers.Peer(b, "catalogd-ref") }

// gqlQueries are the measured queries; catalogd has no package argument.
func gqlQueries(pkg string) map[string]string {
	return map[string]string{
		"bundles100": `{ olmbundles(limit: 100) { name package image } }`,
		"package":    `{ olmbundles(package: "` + pkg + `") { name package image } }`,
	}
}

// BenchmarkGraphQLSideBySide starts catalogsync and catalogd-ref on the
// same catalog, one after the other in one run, and measures for each the
// first GraphQL answer after the port opens (schema build included),
// p50/p99 and req/s of olmbundles(limit: 100) and of a package filter
// (catalogsync only), and the process's peak RSS.
func BenchmarkGraphQLSideBySide(b *testing.B) {
	for _, name := range []string{"community-v4.21", "generated-x16"} {
		b.Run(name, func(b *testing.B) {
			ref := catalogdRef(b)
			f := setup(b)
			img := f.image(b, name)
			spec := specOf(name)
			src, err := f.sourceDir(spec)
			if err != nil {
				b.Fatal(err)
			}
			args, env := storeArgs(b, f, name, "fs")
			root := (&keepAlive{b}).TempDir()
			if out, err := exec.Command(ref, "store", "-fbc", src, "-root", root, "-name", name, "-graphql").CombinedOutput(); err != nil {
				b.Fatalf("catalogd-ref store: %v\n%s", err, out)
			}
			qs := gqlQueries(spec.pkg)
			b.Run("catalogsync", func(b *testing.B) {
				b.ReportMetric(float64(img.fbcBytes)/1e6, "catalog-MB")
				addr := freeport.Addr(b)
				measureGraphQL(b, func() *exec.Cmd {
					return exec.Command(f.bin, append([]string{"serve", "--addr", addr, "--gc-interval", "0", "--log-level", "warn"}, args...)...)
				}, env, addr, name, qs)
			})
			b.Run("catalogd", func(b *testing.B) {
				b.ReportMetric(float64(img.fbcBytes)/1e6, "catalog-MB")
				addr := freeport.Addr(b)
				delete(qs, "package")
				measureGraphQL(b, func() *exec.Cmd { return exec.Command(ref, "serve", "-root", root, "-addr", addr, "-graphql") }, os.Environ(), addr, name, qs)
			})
		})
	}
}

// firstStarts is how many fresh starts the first-query figure is the
// median of.
const firstStarts = 3

func measureGraphQL(b *testing.B, newCmd func() *exec.Cmd, env []string, addr, name string, qs map[string]string) {
	url := "http://" + addr + "/catalogs/" + name + "/api/v1/graphql"
	var firsts []time.Duration
	var cmd *exec.Cmd
	var client *http.Client
	for i := range firstStarts {
		cmd = newCmd()
		var first time.Duration
		client, first = startAndQuery(b, cmd, env, addr, url, qs["bundles100"])
		firsts = append(firsts, first)
		if i < firstStarts-1 {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	slices.Sort(firsts)
	b.ReportMetric(ms(firsts[len(firsts)/2]), "first-query-ms")
	for _, k := range []string{"bundles100", "package"} {
		q, ok := qs[k]
		if !ok {
			continue
		}
		lat := make([]time.Duration, 0, 200)
		for range 200 {
			t := time.Now()
			gqlPost(b, client, url, q)
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		b.ReportMetric(ms(lat[len(lat)/2]), k+"-p50-ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), k+"-p99-ms")
		const workers, each = 4, 50
		var wg sync.WaitGroup
		t := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					gqlPost(b, client, url, q)
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(workers*each/time.Since(t).Seconds(), k+"-req/s")
	}
	b.ReportMetric(idleRSS, "idle-rss-MB")
	b.ReportMetric(procHWM(b, cmd.Process.Pid), "peak-rss-MB")
}

// idleRSS is the peak RSS of the last started server before its first
// query: what it costs before serving anything.
var idleRSS float64

// startAndQuery starts cmd, waits for its port and times the first query.
func startAndQuery(b *testing.B, cmd *exec.Cmd, env []string, addr, url, q string) (*http.Client, time.Duration) {
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 20000 {
			b.Fatalf("never listened\n%s", stderr.String())
		}
		time.Sleep(500 * time.Microsecond)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	idleRSS = procHWM(b, cmd.Process.Pid)
	t0 := time.Now()
	gqlPost(b, client, url, q)
	return client, time.Since(t0)
}

func gqlPost(b *testing.B, c *http.Client, url, q string) {
	body := fmt.Sprintf(`{"query":%q}`, q)
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || bytes.Contains(out, []byte(`"errors"`)) {
		b.Fatalf("graphql %d: %.300s", resp.StatusCode, out)
	}
}

// procHWM is VmHWM of a running process, in MB.
func procHWM(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
