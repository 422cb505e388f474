package e2e

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// activator stands in for Knative's: it listens where the service's
// clients send requests; with no service process running, the first
// request starts one, every request waits until /readyz passes and is
// then forwarded; after idle without requests the process is stopped
// (SIGTERM), as a scale to zero.
type activator struct {
	t      *testing.T
	bin    string
	target string // the service's address
	idle   time.Duration
	srv    *http.Server

	mu       sync.Mutex
	args     []string
	env      []string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	ready    chan struct{}
	inflight int
	timer    *time.Timer
	// Times of the current process: exec, first /readyz 200.
	execAt, readyAt time.Time
	starts          int
	hooks           []hookReply // webhook replies forwarded, in order
}

type hookReply struct {
	at     time.Time
	status int
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// hookReplies returns the webhook replies forwarded so far.
func (a *activator) hookReplies() []hookReply {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]hookReply(nil), a.hooks...)
}

func newActivator(t *testing.T, listen, target, bin string, idle time.Duration) *activator {
	a := &activator{t: t, bin: bin, target: target, idle: idle}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	a.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready, err := a.begin()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer a.end()
		select {
		case <-ready:
		case <-r.Context().Done():
			return
		}
		rec := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(rec, r)
		if strings.HasPrefix(r.URL.Path, "/hooks/") {
			a.mu.Lock()
			a.hooks = append(a.hooks, hookReply{at: time.Now(), status: rec.status})
			a.mu.Unlock()
		}
	})}
	go a.srv.Serve(ln)
	t.Cleanup(func() {
		a.srv.Close()
		a.stop()
	})
	return a
}

// configure sets the command line of the next process.
func (a *activator) configure(args, env []string, logPath string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.args, a.env, a.logPath = args, env, logPath
}

// begin counts a request in, starting the process if none runs; the
// channel closes once it is ready.
func (a *activator) begin() (chan struct{}, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight++
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if a.cmd != nil {
		return a.ready, nil
	}
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		a.inflight--
		return nil, err
	}
	cmd := exec.Command(a.bin, append([]string{"serve", "--addr", a.target}, a.args...)...)
	cmd.Env = append(os.Environ(), a.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = servers.ChildProcAttr()
	a.execAt = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		a.inflight--
		return nil, err
	}
	a.cmd, a.starts = cmd, a.starts+1
	a.exited, a.ready = make(chan struct{}), make(chan struct{})
	exited, ready := a.exited, a.ready
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	go a.awaitReady(ready, exited)
	return ready, nil
}

// awaitReady polls /readyz until it answers 200 (bounded by a minute).
func (a *activator) awaitReady(ready, exited chan struct{}) {
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		select {
		case <-exited:
			return
		default:
		}
		if resp, err := c.Get("http://" + a.target + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				a.mu.Lock()
				a.readyAt = time.Now()
				a.mu.Unlock()
				close(ready)
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (a *activator) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	if a.inflight == 0 && a.cmd != nil {
		if a.timer != nil {
			a.timer.Stop()
		}
		a.timer = time.AfterFunc(a.idle, func() {
			a.mu.Lock()
			a.timer = nil
			a.mu.Unlock()
			a.stopIfIdle()
		})
	}
}

// stopIfIdle stops the process if no request came in and it runs no
// sync: Knative knows only requests, so a deployment scaling to zero must
// keep its scale-down delay above the longest sync (deploy/README.md).
func (a *activator) stopIfIdle() {
	if a.syncing() {
		a.mu.Lock()
		if a.inflight == 0 && a.cmd != nil && a.timer == nil {
			a.timer = time.AfterFunc(a.idle, func() {
				a.mu.Lock()
				a.timer = nil
				a.mu.Unlock()
				a.stopIfIdle()
			})
		}
		a.mu.Unlock()
		return
	}
	a.stopWhen(func() bool { return a.inflight == 0 })
}

// syncing asks the service whether a sync runs.
func (a *activator) syncing() bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + a.target + "/api/v1/catalogs")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), `"running":{`)
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits.
// It holds the lock throughout: a request arriving meanwhile waits, and
// starts a new process only once this one is gone.
func (a *activator) stop() { a.stopWhen(func() bool { return true }) }

// stopWhen stops the process if ok, checked under the same lock.
func (a *activator) stopWhen(ok func() bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !ok() {
		return
	}
	cmd, exited := a.cmd, a.exited
	a.cmd = nil
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// running reports whether a process runs.
func (a *activator) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cmd != nil
}

// times returns the current (or last) process's exec and ready times.
func (a *activator) times() (execAt, readyAt time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.execAt, a.readyAt
}

// waitStopped waits (bounded) until the idle stop has happened.
func (a *activator) waitStopped(d time.Duration) error {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !a.running() {
			return nil
		}
	}
	return errors.New("activator: service still running after the idle period")
}
