package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// stuckServe starts the serve binary with a request in flight that will
// end before the read-header timeout (10 s; a client that sent half its
// headers), and returns it with its log.
func stuckServe(t *testing.T, grace string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(servers.CatalogsyncBinary(t), "serve", "--store", t.TempDir(), "--addr", addr,
		"--no-docker-config", "--shutdown-grace", grace)
	cmd.Stdout, cmd.Stderr = &logs, &logs
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
	fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: %s\r\n", addr)
	return cmd, &logs
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
		// The first signal is being handled once serve logs it stops serving.
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(t, cmd); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d\n%s", code, logs.String())
		}
	})
}
