package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// largeCatalog returns the 13.9 MB community-v4.21 catalog beside the
// repository (../shared, or ../../shared for a worktree under wt/) or, in
// a clone without it, about as much made of renamed copies of the
// repository's community-v4.21-3pkgs.
func largeCatalog(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	for _, up := range []string{"..", "../.."} {
		p := filepath.Join(root, up, "shared/testdata/fbc/community-v4.21/configs")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	dir := t.TempDir()
	if err := imagebuild.GenerateCopies(filepath.Join(root, "testdata/fbc/community-v4.21-3pkgs/configs"), dir, 70); err != nil {
		t.Fatal(err)
	}
	return dir
}

// syncedStore syncs the FBC in dir as catalog name into a new store.
func syncedStore(t *testing.T, name, dir string) string {
	t.Helper()
	layout := filepath.Join(t.TempDir(), "oci")
	ref := "ocidir://" + layout + ":v1"
	if _, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(), ref, imagebuild.FromDir(dir, "/configs")); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	var errb logbuf.Buffer
	if code := run(context.Background(), []string{"sync", "--name", name, "--image", ref, "--store", store, "--no-docker-config"}, io.Discard, &errb); code != 0 {
		t.Fatalf("sync: %d %s", code, errb.String())
	}
	return store
}

// heldBy counts what this process holds for the server: open files under
// store and established sockets whose local port is port.
func heldBy(t *testing.T, store string, port int) (files, socks int) {
	t.Helper()
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fl := strings.Fields(line)
			if len(fl) < 10 {
				continue
			}
			_, lport, _ := strings.Cut(fl[1], ":")
			if p, _ := strconv.ParseInt(lport, 16, 32); int(p) == port && fl[3] != "0A" { // not LISTEN
				inodes["socket:["+fl[9]+"]"] = true
			}
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		switch {
		case err != nil:
		case strings.HasPrefix(target, store+"/"):
			files++
		case inodes[target]:
			socks++
		}
	}
	return files, socks
}

// 100 clients ask for /all of a 13.9 MB catalog and never read: once
// their responses make no progress for --write-stall-timeout, serve lets
// go of every file and socket they held. A slow reader that keeps reading
// gets the whole catalog.
func TestServeCutsOffStalledReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real 5 s stalls on a 13.9 MB catalog; internal/stall's TestResponsesJudgeProgress covers the rule")
	}
	store := syncedStore(t, "community", largeCatalog(t))
	cfg := writeServeConfig(t, "catalogs: [{name: community, image: \"127.0.0.1:1/community:v1\"}]\n")
	s := startServe(t, "--config", cfg, "--store", store, "--write-stall-timeout", "5s")
	_, portStr, _ := net.SplitHostPort(s.addr)
	port, _ := strconv.Atoi(portStr)
	req := "GET /catalogs/community/api/v1/all HTTP/1.1\r\nHost: catalogsync.test\r\n\r\n"

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(16 << 10)
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Every response is under way before the wait starts: its headers
	// arrived. (Counting 100 files open at once fails on a loaded machine,
	// where the first responses are already cut off before the last start.)
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		if _, err := readHeaders(bufio.NewReaderSize(c, 512)); err != nil {
			t.Fatalf("response %d never started: %v", i, err)
		}
	}
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for {
		files, socks := heldBy(t, store, port)
		if files == 0 && socks == 0 {
			t.Logf("100 stalled responses released %s after all were under way", time.Since(start).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90 s on, serve still holds %d files and %d sockets for clients that stopped reading", files, socks)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A slow reader: 1 MiB at a time, pausing well under the timeout.
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	io.WriteString(c, req)
	br := bufio.NewReader(c)
	head, err := readHeaders(br)
	if err != nil {
		t.Fatalf("slow reader's headers: %v", err)
	}
	var want int64
	for _, l := range strings.Split(head, "\r\n") {
		if v, ok := strings.CutPrefix(l, "Content-Length: "); ok {
			want, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	var got int64
	for got < want {
		n, err := io.CopyN(io.Discard, br, min(1<<20, want-got))
		got += n
		if err != nil {
			t.Fatalf("slow reader cut off after %d of %d bytes: %v", got, want, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if want < 10<<20 {
		t.Fatalf("served %d bytes, want the 13.9 MB catalog (%s)", want, head)
	}
}

// readHeaders reads an HTTP response's header block, through its empty line.
func readHeaders(br *bufio.Reader) (string, error) {
	var head bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return head.String(), err
		}
		head.WriteString(line)
		if line == "\r\n" {
			return head.String(), nil
		}
	}
}
