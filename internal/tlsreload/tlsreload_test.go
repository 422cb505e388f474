package tlsreload

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
)

// serve runs an HTTPS server with the reloader on 127.0.0.1.
func serve(t *testing.T, f Files, h http.Handler) string {
	t.Helper()
	r, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go r.Run(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: r.TLSConfig(), ErrorLog: nil}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { cancel(); srv.Close() })
	return "https://" + ln.Addr().String()
}

// servedSerial is the serial of the certificate a new connection gets.
func servedSerial(t *testing.T, c *http.Client, url string) int64 {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

func TestRotationFailsNoRequest(t *testing.T) {
	dir := t.TempDir()
	authority := tlstest.NewCA(t, "test-ca")
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	c1, k1 := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, f.Cert, c1)
	tlstest.WriteAtomic(t, f.Key, k1)
	url := serve(t, f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	cl := tlstest.Client(authority.PEM, nil)
	if s := servedSerial(t, cl, url); s != 1 {
		t.Fatalf("serial %d, want 1", s)
	}
	// A client trusting another CA is refused.
	if _, err := tlstest.Client(tlstest.NewCA(t, "other").PEM, nil).Get(url); err == nil {
		t.Fatal("a client trusting another CA connected")
	}

	// Requests run while the files are replaced.
	var stop atomic.Bool
	var failed, done atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000 && !stop.Load(); i++ {
				resp, err := cl.Get(url)
				if err != nil {
					failed.Add(1)
					t.Errorf("request during rotation: %v", err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "ok" {
					failed.Add(1)
				}
				done.Add(1)
			}
		}()
	}
	c2, k2 := authority.Issue(t, 2, false)
	// Key first, then certificate: in between the pair does not match and
	// the old one must stay in use.
	tlstest.WriteAtomic(t, f.Key, k2)
	tlstest.WriteAtomic(t, f.Cert, c2)
	got := int64(1)
	for i := 0; i < 500 && got != 2; i++ {
		got = servedSerial(t, cl, url)
		if got != 2 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	if got != 2 {
		t.Fatalf("new connections still get serial %d after the files changed", got)
	}
	if failed.Load() > 0 || done.Load() == 0 {
		t.Fatalf("%d of %d requests failed during rotation", failed.Load(), done.Load())
	}
}

func TestClientCA(t *testing.T) {
	dir := t.TempDir()
	server, clients := tlstest.NewCA(t, "server-ca"), tlstest.NewCA(t, "client-ca")
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), ClientCA: filepath.Join(dir, "ca.crt")}
	c1, k1 := server.Issue(t, 1, false)
	tlstest.WriteAtomic(t, f.Cert, c1)
	tlstest.WriteAtomic(t, f.Key, k1)
	tlstest.WriteAtomic(t, f.ClientCA, clients.PEM)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	url := serve(t, f, RequireClientCert(func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/api/") })(mux))

	cc, ck := clients.Issue(t, 7, true)
	pair, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	status := func(c *http.Client, path string) int {
		resp, err := c.Get(url + path)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	anon, mutual := tlstest.Client(server.PEM, nil), tlstest.Client(server.PEM, &pair)
	if s := status(anon, "/catalogs/x/api/v1/all"); s != 200 {
		t.Errorf("content without a client certificate: %d", s)
	}
	if s := status(anon, "/api/v1/catalogs"); s != 401 {
		t.Errorf("API without a client certificate: %d, want 401", s)
	}
	if s := status(mutual, "/api/v1/catalogs"); s != 200 {
		t.Errorf("API with a client certificate: %d", s)
	}
	oc, ok := tlstest.NewCA(t, "rogue").Issue(t, 9, true)
	rogue, _ := tls.X509KeyPair(oc, ok)
	// A certificate from another CA is not sent (it matches none of the
	// CAs the server names) or is refused at the handshake.
	if s := status(tlstest.Client(server.PEM, &rogue), "/api/v1/catalogs"); s != -1 && s != 401 {
		t.Errorf("API with a rogue client certificate: %d", s)
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []Files{
		{Cert: filepath.Join(dir, "missing.crt"), Key: filepath.Join(dir, "missing.key")},
		{Cert: filepath.Join(dir, "x.crt")},
	} {
		if _, err := New(f); err == nil {
			t.Errorf("New(%+v) accepted", f)
		}
	}
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not pem"), 0o600)
	if _, err := New(Files{Cert: bad, Key: bad}); err == nil {
		t.Error("garbage accepted")
	}
}
