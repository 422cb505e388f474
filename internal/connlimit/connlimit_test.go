package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serve serves h on a listener capped at n whose new connections count as
// idle after grace, and returns it with its address.
func serve(t *testing.T, n int, grace time.Duration, h http.Handler) (*Listener, *http.Server, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(inner, n)
	l.grace = grace
	srv := &http.Server{Handler: h, ConnState: l.ConnState, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() { _ = srv.Serve(l); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return l, srv, inner.Addr().String()
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

// get sends one request on c and reads its answer, leaving c open.
func get(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a bound on a hang
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// Idle keep-alive and silent connections far beyond the cap: each new one
// is answered, and the listener never holds more than the cap.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	l, _, addr := serve(t, 4, time.Millisecond, ok)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if i%3 == 0 {
			continue // silent: connected, never a request
		}
		if err := get(c); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if n := l.Open(); n > 4 {
			t.Fatalf("%d connections open, cap 4", n)
		}
	}
}

// Requests in progress are never closed to make room: with the cap taken
// by running requests, others wait and all are answered.
func TestBusyConnectionsWait(t *testing.T) {
	var inflight, peak atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond) // keeps requests overlapping
		inflight.Add(-1)
		io.WriteString(w, "ok")
	})
	_, _, addr := serve(t, 2, newGrace, h)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 16 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				err = get(c)
				c.Close()
			}
			if err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 || peak.Load() > 2 {
		t.Fatalf("%d requests failed, %d ran at once with a cap of 2", failed.Load(), peak.Load())
	}
}

// Closing the server ends an Accept waiting for room.
func TestCloseEndsWaitingAccept(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(inner, 1)
	srv := &http.Server{Handler: h, ConnState: l.ConnState}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer close(release)
	first, _ := net.Dial("tcp", inner.Addr().String())
	defer first.Close()
	fmt.Fprintf(first, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	second, _ := net.Dial("tcp", inner.Addr().String())
	defer second.Close()
	_ = l.Close()
	if err := <-served; err == nil {
		t.Fatal("Serve returned no error after its listener closed")
	}
	if len(entered) != 0 {
		t.Fatal("the second connection was served beyond the cap")
	}
}

// Connections that never send a request hold their room only for the
// grace: a client behind them is answered.
func TestSilentConnectionsMakeRoom(t *testing.T) {
	_, _, addr := serve(t, 2, 20*time.Millisecond, ok)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := get(c); err != nil {
		t.Fatalf("a client behind two silent connections: %v", err)
	}
}
