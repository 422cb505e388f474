package stall

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A client that stops reading is cut off: the handler's writes fail and
// it returns. One that reads slowly gets everything, and a kept-alive
// connection idle for longer than d still serves its next request.
//
// Over real connections: what TestResponsesJudgeProgress checks on a
// fake clock, with the kernel's buffers and net/http's deadlines.
func TestResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real waits; TestResponsesJudgeProgress covers it on a fake clock")
	}
	t.Parallel()
	// d is long against the readers' pace (a MiB every d/10), so a busy
	// machine that stalls the test's reader for a while is no stalled
	// client.
	const d = 10 * time.Second
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	done := make(chan error, 1)
	srv := httptest.NewServer(Responses(d)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 256 // 16 MiB: more than loopback buffers hold
		switch r.URL.Path {
		case "/small":
			n = 4
		case "/onewrite":
			// One Write of 16 MiB, as a cached answer is sent: the
			// deadline must move while it goes out.
			_, err := w.Write(bytes.Repeat(chunk, 256))
			if err != nil {
				t.Errorf("one large write to a slow reader: %v", err)
			}
			return
		}
		var err error
		for i := 0; i < n && err == nil; i++ {
			_, err = w.Write(chunk)
		}
		if r.URL.Path == "/big" {
			done <- err
		}
	})))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the handler wrote 16 MiB to a client that reads nothing")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the handler is still writing to a client that stopped reading")
	}

	// Slow, steady readers, of many writes and of one; each takes longer
	// than d in all (16 MiB at a MiB per d/10).
	for _, path := range []string{"/slow", "/onewrite"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for {
			n, err := io.CopyN(io.Discard, resp.Body, 1<<20)
			got += n
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: slow reader cut off after %d bytes: %v", path, got, err)
			}
			time.Sleep(d / 10)
		}
		resp.Body.Close()
		if got != 256*64<<10 {
			t.Fatalf("%s: slow reader got %d bytes", path, got)
		}
	}

	// Keep-alive: the second request comes after more than d of idleness.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range 2 {
		if i > 0 {
			time.Sleep(d + d/2)
		}
		resp, err := client.Get(srv.URL + "/small")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 4*64<<10 {
			t.Fatalf("request %d: %d bytes, %v", i, len(b), err)
		}
	}
}
