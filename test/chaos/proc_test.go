package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// proc is one server process run inside a host's namespace. Its log is
// appended to across restarts.
type proc struct {
	name    string
	ns      string
	path    string
	args    []string
	env     []string
	logPath string
	ready   func(context.Context) error

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs the process (ip netns exec replaces itself with it, so the
// pid is the server's) and waits until ready answers.
func (p *proc) start(timeout time.Duration) error {
	p.mu.Lock()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	fmt.Fprintf(f, "=== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), p.name)
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.ns, p.path}, p.args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATALOGSYNC_") && !strings.HasPrefix(kv, "MINIO_") && !strings.HasPrefix(kv, "KUBECONFIG=") &&
			!strings.HasPrefix(kv, "REGISTRY_") && !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = servers.ChildProcAttr()
	err = spawn(cmd)
	f.Close()
	if err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		attempt, c := context.WithTimeout(ctx, 2*time.Second)
		err = p.ready(attempt)
		c()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before it was ready; log %s:\n%s", p.name, p.logPath, p.tail(30))
		case <-ctx.Done():
			p.kill()
			return fmt.Errorf("%s not ready after %v: %v; log %s:\n%s", p.name, timeout, err, p.logPath, p.tail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// signal sends sig to the process group; false when nothing runs.
func (p *proc) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig) == nil
}

// kill sends SIGKILL (after SIGCONT, so a paused process dies too) and
// waits for it to exit.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	<-done
}

// stop asks the process to end (SIGTERM), then kills it.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	p.kill()
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// httpReady wants 200 from url, asked from inside ns.
func httpReady(ns, url string, header http.Header) func(context.Context) error {
	return servers.HTTPReady(nsClient(ns, 5*time.Second), url, header)
}

// nsTransport is an HTTP transport whose connections start in ns; TLS is
// not verified (the apiserver's certificate is self-signed).
func nsTransport(ns string) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dialer(ns),
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test servers' self-signed certificates
	}
}

func nsClient(ns string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: nsTransport(ns)}
}

var errNotRunning = errors.New("not running")

// spawnc feeds the one goroutine that starts every process. The kernel
// sends Pdeathsig when the thread that forked a child exits, not the
// process, and inNetns ends the threads it moves: starting children from
// one thread that lives as long as the test binary keeps them alive.
var spawnc = func() chan func() {
	c := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range c {
			f()
		}
	}()
	return c
}()

func spawn(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	spawnc <- func() { errc <- cmd.Start() }
	return <-errc
}
