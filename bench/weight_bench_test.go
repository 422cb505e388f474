package bench

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/release"
)

// BenchmarkWeight weighs the release binary, built as the Dockerfile
// builds it: its size, the packages linked, what their initialisation
// costs at each start (GODEBUG=inittrace=1 `catalogsync version`: the
// median time and the least bytes of the iterations) and the resident
// memory of an idle `serve` once it answers /readyz (median). test/budget
// holds the budget; this puts the figures beside the others of the run.
func BenchmarkWeight(b *testing.B) {
	weigh(b, "catalogsync", []string{"version"}, []string{"serve"})
}

// BenchmarkWeightReader is BenchmarkWeight for catalogsync-reader
// (initialisation of `-h`, an idle reader of an empty store).
func BenchmarkWeightReader(b *testing.B) {
	weigh(b, "catalogsync-reader", []string{"-h"}, nil)
}

// weigh reports the weight of ./cmd/<cmd>: initArgs is a quick run that
// initialises every package, serveArgs start it serving (before --addr).
func weigh(b *testing.B, cmd string, initArgs, serveArgs []string) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	bin := filepath.Join(b.TempDir(), cmd)
	if err := release.Build(root, cmd, bin); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	deps, err := release.Packages(root, cmd)
	if err != nil {
		b.Fatal(err)
	}
	var initMS, rss []float64
	initBytes := int64(-1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ms, n := initTrace(b, bin, initArgs)
		initMS = append(initMS, ms)
		if initBytes < 0 || n < initBytes {
			initBytes = n
		}
		rss = append(rss, idleServeRSS(b, bin, serveArgs))
	}
	b.StopTimer()
	b.ReportMetric(float64(fi.Size())/1e6, "binary-MB")
	b.ReportMetric(float64(len(deps)), "packages")
	b.ReportMetric(float64(initBytes), "init-bytes")
	b.ReportMetric(median(initMS), "init-ms")
	b.ReportMetric(median(rss)/(1<<10), "idle-RSS-MiB")
}

// initTrace sums the inittrace lines of one start of bin args:
// "init PKG @T ms, MS ms clock, BYTES bytes, N allocs".
func initTrace(b *testing.B, bin string, args []string) (ms float64, n int64) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		m, _ := strconv.ParseFloat(f[4], 64)
		v, _ := strconv.ParseInt(f[7], 10, 64)
		ms, n = ms+m, n+v
	}
	return ms, n
}

// idleServeRSS starts bin args with an empty store and no catalog and
// returns its VmRSS in KiB once /readyz answers 200.
func idleServeRSS(b *testing.B, bin string, args []string) float64 {
	addr := freeport.Addr(b)
	cmd := exec.Command(bin, append(slices.Clone(args), "--addr", addr)...)
	cmd.Stdout = io.Discard
	cmd.Env = append(os.Environ(), "CATALOGSYNC_STORE="+b.TempDir())
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c := &http.Client{Timeout: time.Second}
	for i := 0; ; i++ {
		if resp, err := c.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i == 600 {
			b.Fatalf("%s never answered /readyz", bin)
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kib
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
