package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// Far more idle keep-alive connections than the cap: the process holds
// about the cap's worth of descriptors, and a well-behaved reader opening
// new connections is still answered every time (idle ones make room).
func TestServeIdleConnectionsCapped(t *testing.T) {
	servers.CatalogsyncBinary(t) // skips under -short, before any setup
	const maxConns, idle, reads = 64, 300, 20
	cfg := writeServeConfig(t, fmt.Sprintf("storage:\n  dir: %s\ncatalogs:\n- name: sample\n  image: %s\n", t.TempDir(), sample(t)))
	// By its variable: the cap is a setting like any other.
	cs := servers.StartCatalogsync(t, []string{"--config", cfg, "--no-docker-config"}, "CATALOGSYNC_MAX_CONNECTIONS="+strconv.Itoa(maxConns))
	pid := cs.Pid()
	if _, err := os.Stat("/proc/self/fd"); err != nil || pid == 0 {
		t.Skip("no /proc: cannot count the process's descriptors")
	}
	all := cs.URL + "/catalogs/sample/api/v1/all"
	reader := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	read := func() error {
		resp, err := reader.Get(all)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && (resp.StatusCode != 200 || n == 0) {
			err = fmt.Errorf("%d, %d bytes", resp.StatusCode, n)
		}
		return err
	}
	for i := 0; read() != nil; i++ {
		if i > 600 {
			t.Fatalf("the sample catalog was never served\n%s", cs.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := fdCount(t, pid)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	opened := 0
	for range idle {
		c, err := keepAliveIdle(cs.Addr)
		if err != nil {
			continue // closed by the server to make room, or refused: both fine
		}
		opened++
		held = append(held, c)
	}
	if opened < maxConns {
		t.Fatalf("only %d of %d idle connections got an answer", opened, idle)
	}
	failures := 0
	for range reads {
		if err := read(); err != nil {
			failures++
			t.Logf("read /all: %v", err)
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d reads of /all failed with %d idle connections open", failures, reads, opened)
	}
	// The cap's worth of connections, the reader's, a little slack for
	// files the process opens meanwhile.
	if after := fdCount(t, pid); after > before+maxConns+8 {
		t.Errorf("serve holds %d descriptors with %d idle connections open (%d before, cap %d)", after, opened, before, maxConns)
	}
}

// keepAliveIdle opens a connection, gets one answer on it and leaves it
// open and idle, as a keep-alive client between requests.
func keepAliveIdle(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	// A bound on a hung answer, not a measurement.
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// fdCount counts the open descriptors of process pid.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("descriptors of serve: %v", err)
	}
	return len(ents)
}
