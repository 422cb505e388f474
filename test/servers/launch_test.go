package servers

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLaunchRetriesWhenPortTaken gives the registry, on its first attempt, a
// port that another HTTP server already holds and answers /v2/ on: launch
// must not take that answer for the registry's, and must retry elsewhere.
func TestLaunchRetriesWhenPortTaken(t *testing.T) {
	bin := Binary(t, "registry")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go impostor.Serve(l)
	t.Cleanup(func() { impostor.Close() })
	taken := l.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	r := &Registry{
		t:          t,
		StorageDir: filepath.Join(dir, "storage"),
		ConfigPath: filepath.Join(dir, "config.yml"),
		LogPath:    filepath.Join(dir, "registry.log"),
	}
	var tried []int
	p, err := launch(1, func(ports []int) *process {
		if len(tried) == 0 {
			ports = []int{taken}
		}
		tried = append(tried, ports[0])
		return r.process(t, bin, registryConfig{}, ports[0])
	}, registryReadyTimeout, r.ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cleanup(t) })
	if len(tried) != 2 || tried[1] == taken || r.Host == l.Addr().String() {
		t.Fatalf("ports tried %v, registry on %s, impostor on %d", tried, r.Host, taken)
	}
	if !strings.Contains(p.logTail(100), "already in use") {
		t.Fatalf("the first attempt did not fail on the port:\n%s", p.logTail(100))
	}
}

// fakeTB records how Binary ends a test instead of ending this one.
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runFake(f *fakeTB, fn func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
}

func TestBinaryFailsWithToolOutputOrSkips(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Binary skips every test that needs a tool")
	}
	t.Setenv("CATALOGSYNC_TOOLS", t.TempDir()) // an empty cache: nothing is built

	var f fakeTB
	runFake(&f, func(tb testing.TB) { Binary(tb, "no-such-tool") })
	if !f.failed || !strings.Contains(f.msg, "unknown tool: no-such-tool") {
		t.Fatalf("failed %v, message %q: want the tool's output", f.failed, f.msg)
	}

	t.Setenv(SkipSlowToolsEnv, "1")
	f = fakeTB{}
	runFake(&f, func(tb testing.TB) { Binary(tb, "minio") })
	if !f.skipped || f.failed || !strings.Contains(f.msg, "minio is not built yet") {
		t.Fatalf("skipped %v failed %v, message %q", f.skipped, f.failed, f.msg)
	}
}
