package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

// stuckServe starts the serve binary with a request in flight that will
// not end before the read timeout (a webhook whose body never comes), and
// returns it with its log once the handler is reading that body.
func stuckServe(t *testing.T, grace string) (*exec.Cmd, *logbuf.Buffer) {
	t.Helper()
	addr := freeport.Addr(t)
	cfg := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(cfg, []byte("catalogs: []\nwebhooks:\n  receivers:\n  - {name: ci, type: generic, secret: s3cret}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	cmd := exec.Command(servers.CatalogsyncBinary(t), "serve", "--config", cfg, "--store", t.TempDir(), "--addr", addr,
		"--no-docker-config", "--shutdown-grace", grace, "--read-timeout", "1h")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 600 {
			t.Fatal("serve never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// The server answers 100 Continue once the handler reads the body: from
	// then on the request is in flight for sure.
	fmt.Fprintf(c, "POST /hooks/ci HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", addr)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	return cmd, logs
}

// exitCode waits (bounded) for cmd to exit and returns its exit code, or
// its signal as 128+n.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not exit")
		return -1
	}
}

// TestServeShutdown: a stop that takes its whole grace (a request that
// never ends) exits 0, without "context deadline exceeded"; a second
// SIGTERM exits at once even with an hour of grace left.
func TestServeShutdown(t *testing.T) {
	t.Run("grace used up", func(t *testing.T) {
		cmd, logs := stuckServe(t, "1s")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(t, cmd); code != 0 || strings.Contains(logs.String(), "deadline exceeded") {
			t.Fatalf("exit %d\n%s", code, logs.String())
		}
		if !strings.Contains(logs.String(), "closing their connections") {
			t.Fatalf("the forced close is not logged:\n%s", logs.String())
		}
	})
	t.Run("second signal", func(t *testing.T) {
		cmd, logs := stuckServe(t, "1h")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		// Two signals sent at once may reach the process as one: the
		// second goes once serve says it is stopping.
		for i := 0; !strings.Contains(logs.String(), "a second signal exits at once"); i++ {
			if i > 1200 {
				t.Fatalf("serve never started stopping:\n%s", logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(t, cmd); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d\n%s", code, logs.String())
		}
	})
}
