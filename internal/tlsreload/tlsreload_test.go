package tlsreload

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
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
	"github.com/catalogsync/catalogsync/test/logbuf"
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

// logs sends the reload messages to a buffer for the test.
func logs(t *testing.T) *logbuf.Buffer {
	b := &logbuf.Buffer{}
	LogTo(slog.New(slog.NewTextHandler(b, nil)))
	t.Cleanup(func() { logger.Store(nil) })
	return b
}

func TestHalfWrittenPairKeepsServingThePreviousOne(t *testing.T) {
	dir := t.TempDir()
	authority := tlstest.NewCA(t, "test-ca")
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	c1, k1 := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, f.Cert, c1)
	tlstest.WriteAtomic(t, f.Key, k1)
	log := logs(t)
	url := serve(t, f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	cl := tlstest.Client(authority.PEM, nil)
	served := func(want int64, what string) {
		t.Helper()
		for range 5 {
			if s := servedSerial(t, cl, url); s != want {
				t.Fatalf("%s: serial %d, want %d", what, s, want)
			}
		}
	}
	warnings := func() int { return strings.Count(log.String(), "not reloaded") }

	// Key first: it does not match the certificate yet.
	c2, k2 := authority.Issue(t, 2, false)
	tlstest.WriteAtomic(t, f.Key, k2)
	served(1, "key without its certificate")
	if n := warnings(); n != 1 {
		t.Fatalf("%d warnings for one bad change, want 1:\n%s", n, log.String())
	}
	// The new chain written in place, its leaf and half its CA's
	// certificate so far: the leaf alone must not be served.
	chain := append(append([]byte{}, c2...), authority.PEM...)
	if err := os.WriteFile(f.Cert, chain[:len(c2)+len(authority.PEM)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	served(1, "certificate chain half written")
	if n := warnings(); n != 2 {
		t.Fatalf("%d warnings after the second bad change, want 2:\n%s", n, log.String())
	}
	if err := os.WriteFile(f.Cert, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	served(2, "pair complete")
	if !strings.Contains(log.String(), "TLS certificate reloaded") {
		t.Errorf("no reload logged:\n%s", log.String())
	}
	// The file vanishes (a volume being remounted): still served.
	if err := os.Remove(f.Cert); err != nil {
		t.Fatal(err)
	}
	served(2, "certificate file missing")
}

func TestClientCARotation(t *testing.T) {
	dir := t.TempDir()
	server, oldCA, newCA := tlstest.NewCA(t, "server-ca"), tlstest.NewCA(t, "client-ca-1"), tlstest.NewCA(t, "client-ca-2")
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), ClientCA: filepath.Join(dir, "ca.crt")}
	c, k := server.Issue(t, 1, false)
	tlstest.WriteAtomic(t, f.Cert, c)
	tlstest.WriteAtomic(t, f.Key, k)
	tlstest.WriteAtomic(t, f.ClientCA, oldCA.PEM)
	log := logs(t)
	url := serve(t, f, RequireClientCert(func(*http.Request) bool { return false })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })))
	client := func(ca *tlstest.CA, serial int64) *http.Client {
		cc, ck := ca.Issue(t, serial, true)
		pair, err := tls.X509KeyPair(cc, ck)
		if err != nil {
			t.Fatal(err)
		}
		return tlstest.Client(server.PEM, &pair)
	}
	accepted := func(c *http.Client) bool {
		resp, err := c.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	oldClient, newClient := client(oldCA, 7), client(newCA, 8)
	if !accepted(oldClient) || accepted(newClient) {
		t.Fatal("before the rotation: want the first CA's client only")
	}

	tlstest.WriteAtomic(t, f.ClientCA, newCA.PEM)
	if !accepted(newClient) {
		t.Fatal("the new CA's client refused after the CA file changed")
	}
	if accepted(oldClient) {
		t.Error("the old CA's client still accepted after the CA file changed")
	}
	// A bad CA file keeps the previous CA, and says so once.
	tlstest.WriteAtomic(t, f.ClientCA, []byte("-----BEGIN CERTIFICATE-----\nMIIB"))
	for range 5 {
		if !accepted(newClient) {
			t.Fatal("a bad CA file dropped the CA in use")
		}
	}
	if n := strings.Count(log.String(), "client CA not reloaded"); n != 1 {
		t.Errorf("%d warnings for one bad CA file, want 1:\n%s", n, log.String())
	}
}
