// Package servers starts real servers (a CNCF Distribution registry, MinIO,
// etcd with kube-apiserver) on 127.0.0.1 for tests, and a fault-injecting
// reverse Proxy to put in front of them.
//
// Binaries come from test/tools.sh, which builds each tool once into a cache
// folder outside the repo. A cold cache takes a long time to fill (kube-apiserver
// about 25 minutes on 2 cores, more than go test's default 10 minute timeout),
// so run `test/tools.sh build` once beforehand, or pass a longer -timeout.
// With CATALOGSYNC_SKIP_SLOW_TOOLS=1 nothing is built: tests whose tool is not
// in the cache yet (or is still being built) are skipped instead.
//
// Every server runs in its own process group, is stopped by t.Cleanup and, on
// Linux, is also killed by the kernel if the test binary dies (Pdeathsig), so
// no server outlives the test binary. Each server logs to a file; when a test
// fails, the file's path and its tail are added to the test output.
package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// SkipSlowToolsEnv names the variable that, set to 1, makes Binary skip the test instead of
// building a tool that is not in the cache yet.
const SkipSlowToolsEnv = "CATALOGSYNC_SKIP_SLOW_TOOLS"

var (
	binMu    sync.Mutex
	binPaths = map[string]string{}
)

// skipShort skips t under go test -short: -short runs the unit tests
// alone (fast, and what mutation testing runs against). Shared servers
// check before their sync.Once, so a skip never reads as a failed start.
func skipShort(t testing.TB, name string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: needs the real %s", name)
	}
}

// Binary returns the path of a tool built by test/tools.sh: "registry",
// "minio", "etcd", "kube-apiserver" or "kubectl". It builds the tool first
// when the cache does not hold it (tools.sh locks, so concurrent callers wait
// for one build). It fails the test with the tool's output when the build
// fails, and skips it when the tool is absent and SkipSlowToolsEnv is 1.
// Under go test -short it skips the test (skipShort).
func Binary(t testing.TB, name string) string {
	t.Helper()
	skipShort(t, name)
	if name == "kubectl" {
		// tools.sh builds kubectl together with kube-apiserver, into the same folder.
		return filepath.Join(filepath.Dir(Binary(t, "kube-apiserver")), "kubectl")
	}
	binMu.Lock()
	defer binMu.Unlock()
	key := name + "\x00" + os.Getenv("CATALOGSYNC_TOOLS") // tools.sh's cache folder override
	if p, ok := binPaths[key]; ok {
		return p
	}
	script, err := toolsScript()
	if err != nil {
		t.Fatalf("servers: %v", err)
	}
	var p string
	if os.Getenv(SkipSlowToolsEnv) == "1" {
		out, err := exec.Command("bash", script, "have", name).Output()
		if err != nil {
			t.Skipf("servers: %s is not built yet and %s=1; build it with: %s build %s", name, SkipSlowToolsEnv, script, name)
		}
		p = strings.TrimSpace(string(out))
	} else {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", script, "path", name)
		cmd.Stdout = &stdout
		// A build can take many minutes: show its progress as it happens.
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
		if err := cmd.Run(); err != nil {
			t.Fatalf("servers: %s path %s: %v\n%s%s", script, name, err, stdout.Bytes(), tail(stderr.Bytes(), 60))
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		p = lines[len(lines)-1]
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("servers: tools.sh gave %q for %s, which is not an executable file (%v)", p, name, err)
	}
	binPaths[key] = p
	return p
}

// toolsScript finds test/tools.sh beside this package's source, or, when the
// source path was trimmed from the binary, above the working directory.
func toolsScript() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "tools.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "test", "tools.sh")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find test/tools.sh above the working directory")
		}
		dir = parent
	}
}

// freePorts returns n distinct ports that were free a moment ago, none
// handed out before in this process: a port given for a server not yet
// started (a replica's address other servers are told first) is free
// until it binds. Another process may take one before the server binds
// it; callers retry on that.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	givenMu.Lock()
	defer givenMu.Unlock()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l) // held open so the next Listen gets a different port
		if p := l.Addr().(*net.TCPAddr).Port; !given[p] {
			given[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)

// errPortTaken reports that a server died because its port was taken.
var errPortTaken = errors.New("port already in use")

// process runs one server binary in its own process group and logs its
// output to a file that is appended to across restarts.
type process struct {
	name    string
	path    string
	args    []string
	env     []string // added to the filtered environment
	logPath string
	// boundLine is what the server logs once it listens on its own port. An
	// answer on the port only counts with it: otherwise it may come from
	// another process that took the port first.
	boundLine string

	mu       sync.Mutex
	logStart int64 // log size when the current run started
	cmd      *exec.Cmd
	done     chan struct{} // closed once cmd has exited
	err      error         // cmd's exit status, set before done closes
}

// envPrefixes are the inherited variables the servers read as configuration;
// they are dropped so a developer's shell cannot change the test servers.
var envPrefixes = []string{"REGISTRY_", "MINIO_", "OTEL_", "ETCD_", "KUBECONFIG=", "CATALOGSYNC_"}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child holds its own copy
	if fi, err := f.Stat(); err == nil {
		p.logStart = fi.Size()
	}
	fmt.Fprintf(f, "=== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	for _, kv := range os.Environ() {
		if !hasAnyPrefix(kv, envPrefixes) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// stop sends SIGTERM to the process group, waits a little for a clean exit,
// then kills whatever is left of the group.
func (p *process) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	signalGroup(cmd, false)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	signalGroup(cmd, true) // also reaps children that outlived the leader
	<-done
	p.mu.Lock()
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
}

// kill sends SIGKILL to the process group and waits for the leader to exit.
func (p *process) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	signalGroup(cmd, true)
	<-done
	p.mu.Lock()
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
}

// waitReady polls ready until it succeeds, the process exits, or the
// timeout passes; errors carry the tail of the server's log.
func (p *process) waitReady(timeout time.Duration, ready func(context.Context) error) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		last = ready(attempt)
		cancelAttempt()
		if last == nil && !p.logSinceStartContains(p.boundLine) {
			last = fmt.Errorf("answered, but its log does not show %q", p.boundLine)
		}
		if last == nil {
			return nil
		}
		select {
		case <-done:
			p.mu.Lock()
			exit := p.err
			p.mu.Unlock()
			p.stop() // clear state so a retry can start it again
			log := p.logTail(40)
			if p.portTaken() {
				return fmt.Errorf("%s exited (%v): %w\n%s", p.name, exit, errPortTaken, log)
			}
			return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", p.name, exit, p.logPath, log)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v; log %s:\n%s", p.name, timeout, last, p.logPath, p.logTail(40))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// portTaken tells whether the last run's log says a port was in use
// (wording differs: "address already in use", "port is already in use").
func (p *process) portTaken() bool {
	return p.logSinceStartContains("already in use")
}

// logSinceStartContains looks for s, case-insensitively, in what the last
// run logged.
func (p *process) logSinceStartContains(s string) bool {
	b, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(b)) < p.logStart {
		return false
	}
	return strings.Contains(strings.ToLower(string(b[p.logStart:])), strings.ToLower(s))
}

// logTail returns the last n lines of the log.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return tail(b, n)
}

// cleanup stops the process and, when the test failed, shows where its log is
// and how it ends.
func (p *process) cleanup(t testing.TB) {
	p.stop()
	if t.Failed() {
		t.Logf("%s log %s, last lines:\n%s", p.name, p.logPath, p.logTail(40))
	}
}

// launch starts a server on fresh ports, retrying with new ones when another
// process took a port between freePorts and the server binding it.
func launch(nPorts int, setup func(ports []int) *process, timeout time.Duration, ready func(context.Context) error) (*process, error) {
	var err error
	for range 3 {
		var ports []int
		if ports, err = freePorts(nPorts); err != nil {
			return nil, err
		}
		p := setup(ports)
		if err = p.start(); err != nil {
			return nil, err
		}
		if err = p.waitReady(timeout, ready); err == nil {
			return p, nil
		}
		p.stop()
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

// restart starts a stopped server again with its old arguments (same ports
// and data) and waits until it is ready.
func (p *process) restart(timeout time.Duration, ready func(context.Context) error) error {
	if err := p.start(); err != nil {
		return err
	}
	if err := p.waitReady(timeout, ready); err != nil {
		p.stop()
		return err
	}
	return nil
}

// HTTPReady returns a readiness check that wants status 200 from url.
func HTTPReady(client *http.Client, url string, header http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
		}
		return nil
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// plainClient polls readiness without any proxy from the environment.
var plainClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}
