package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

// denyWrites makes the tree at dir refuse writes by this user and by the
// processes it starts, and returns what gives them back. Root ignores
// permission bits, so as root the tree is made immutable (chattr +i),
// which refuses root's writes too (EPERM); otherwise its directories lose
// their write bits (EACCES).
func denyWrites(t *testing.T, dir string) (restore func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		set := func(mode os.FileMode) {
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					err = os.Chmod(p, mode)
				}
				return err
			})
		}
		set(0o555)
		t.Cleanup(func() { set(0o755) })
		return func() { set(0o755) }
	}
	chattr := func(flag string) error { return exec.Command("chattr", "-R", flag, dir).Run() }
	if err := chattr("+i"); err != nil {
		t.Skipf("as root, an unwritable store needs chattr +i on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = chattr("-i") })
	return func() {
		if err := chattr("-i"); err != nil {
			t.Fatal(err)
		}
	}
}

// serveProc runs the serve binary without waiting for /readyz: a store
// it cannot write must keep it unready.
func serveProc(t *testing.T, args ...string) (url string, logs *logbuf.Buffer) {
	t.Helper()
	addr := freeport.Addr(t)
	logs = &logbuf.Buffer{}
	cmd := exec.Command(servers.CatalogsyncBinary(t), append([]string{"serve", "--addr", addr, "--no-docker-config", "--log-level", "debug"}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return "http://" + addr, logs
}

// readyStatus is /readyz's status code and body, or 0 while nothing listens.
func readyStatus(url string) (int, string) {
	var b strings.Builder
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(&b, io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, b.String()
}

// catalogView is the REST view of one catalog.
func catalogView(t *testing.T, url, name string) api.Catalog {
	t.Helper()
	var c api.Catalog
	resp, err := http.Get(url + "/api/v1/catalogs/" + name)
	if err != nil {
		return c
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&c)
	return c
}

// A store the process cannot write keeps it unready and fails the
// catalog's sync with a message naming the store; once writable again,
// the process gets ready and syncs the catalog without being asked.
func TestServeUnwritableStoreFailsReadinessAndSync(t *testing.T) {
	servers.CatalogsyncBinary(t) // skips under -short before any setup
	store := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	restore := denyWrites(t, store)
	cfg := writeServeConfig(t, "catalogs:\n- name: sample\n  image: "+sample(t)+"\n")
	url, _ := serveProc(t, "--config", cfg, "--store", store, "--poll-check-interval", "1h")

	eventually(t, "/readyz to answer 503 for the unwritable store", time.Minute, func() bool {
		code, body := readyStatus(url)
		if code == http.StatusOK {
			t.Fatalf("/readyz answered 200 with a store it cannot write: %s", body)
		}
		return code == http.StatusServiceUnavailable && strings.Contains(body, store)
	})
	eventually(t, "the catalog's sync to fail naming the store", time.Minute, func() bool {
		c := catalogView(t, url, "sample")
		return c.ConsecutiveFailures > 0 && c.LastSync != nil && c.LastSync.Error != nil &&
			strings.Contains(c.LastSync.Error.Message, store)
	})
	restore()
	eventually(t, "/readyz to answer 200 once the store takes writes", time.Minute, func() bool {
		code, _ := readyStatus(url)
		return code == http.StatusOK
	})
	eventually(t, "the catalog to be published after the store recovered", time.Minute, func() bool {
		return catalogView(t, url, "sample").Published != nil
	})
}

// `sync` into a store it cannot write names the store and calls the
// failure terminal: the same command fails the same way until an
// operator fixes the permissions.
func TestSyncCommandUnwritableStoreIsTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: changes a directory's attributes")
	}
	store := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	denyWrites(t, store)
	code, out, stderr := runCLI(t, "sync", "--name", "sample", "--image", sample(t), "--store", store)
	msg := out + stderr
	if code != 1 || !strings.Contains(msg, "catalogsync: StorageError (") || !strings.Contains(msg, ", terminal): store "+store+" ") || strings.Contains(msg, "retryable") {
		t.Fatalf("exit %d, want 1 with a terminal error naming %s:\n%s", code, store, msg)
	}
}
