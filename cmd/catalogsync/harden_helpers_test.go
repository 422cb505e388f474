package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// servedProc is a serve running in this process on a free loopback port.
type servedProc struct {
	addr string
	logs *logbuf.Buffer
	code chan int
	stop context.CancelFunc
}

// startServe runs serve with args plus --addr, waits for /readyz and
// stops it at cleanup.
func startServe(t *testing.T, args ...string) *servedProc {
	t.Helper()
	s := &servedProc{addr: freeport.Addr(t), logs: &logbuf.Buffer{}, code: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() {
		s.code <- run(ctx, append([]string{"serve", "--addr", s.addr, "--no-docker-config", "--poll-check-interval", "1h"}, args...), io.Discard, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.code
		if t.Failed() {
			t.Log(s.logs.String())
		}
	})
	waitHTTP(t, "http://"+s.addr+"/readyz")
	return s
}

// writeConfig writes a serve config into a temp dir and returns its path.
func writeServeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// do sends a request and returns its status and body.
func do(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
