package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
	"github.com/catalogsync/catalogsync/test/servers"
)

// TestServeHTTPS: serve with --tls-* files answers /all over HTTPS to a
// client trusting only the test CA, GraphQL too, and with a client CA
// keeps the REST API for clients with a certificate.
func TestServeHTTPS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	authority, clients := tlstest.NewCA(t, "serving-ca"), tlstest.NewCA(t, "client-ca")
	crt, key, clientCA := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	c, k := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, crt, c)
	tlstest.WriteAtomic(t, key, k)
	tlstest.WriteAtomic(t, clientCA, clients.PEM)
	cfg := filepath.Join(dir, "catalogsync.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("storage:\n  dir: %s\ncatalogs:\n- name: sample\n  image: %s\n", filepath.Join(dir, "store"), sample(t))), 0o644)
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--addr", addr,
			"--tls-cert-file", crt, "--tls-key-file", key, "--tls-client-ca-file", clientCA}, &out, &errb)
	}()
	defer func() { cancel(); <-done }()
	base := "https://" + addr
	anon := tlstest.Client(authority.PEM, nil)
	// Bounded: the first sync publishes the catalog.
	var body []byte
	for i := 0; i < 400; i++ {
		if resp, err := anon.Get(base + "/catalogs/sample/api/v1/all"); err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		body = nil
		time.Sleep(50 * time.Millisecond)
	}
	if !bytes.Contains(body, []byte(`"schema":"olm.package"`)) {
		t.Fatalf("/all over HTTPS: %.200q\n%s", body, errb.String())
	}
	resp, err := anon.Post(base+"/catalogs/sample/api/v1/graphql", "application/json", strings.NewReader(`{"query":"{ summary { totalSchemas } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(g, []byte(`"totalSchemas":3`)) {
		t.Errorf("graphql over HTTPS: %d %s", resp.StatusCode, g)
	}
	// A client trusting another CA gets nothing.
	if _, err := tlstest.Client(tlstest.NewCA(t, "other").PEM, nil).Get(base + "/healthz"); err == nil {
		t.Error("a client trusting another CA connected")
	}
	// The REST API wants a client certificate.
	if resp, err := anon.Get(base + "/api/v1/catalogs"); err != nil || resp.StatusCode != 401 {
		t.Errorf("API without a client certificate: %v %v", resp, err)
	}
	cc, ck := clients.Issue(t, 2, true)
	pair, _ := tls.X509KeyPair(cc, ck)
	if resp, err := tlstest.Client(authority.PEM, &pair).Get(base + "/api/v1/catalogs"); err != nil || resp.StatusCode != 200 {
		t.Errorf("API with a client certificate: %v %v", resp, err)
	}
}

func TestServeTLSFlagsChecked(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "serve", "--store", dir, "--addr", "127.0.0.1:0", "--tls-cert-file", filepath.Join(dir, "missing.crt"))
	if code != 2 || !strings.Contains(stderr, "tls") {
		t.Errorf("cert without key: exit %d %s", code, stderr)
	}
}

// mtlsServe is a serve process with HTTPS and a client CA, serving the
// sample catalog, and clients with and without a client certificate.
type mtlsServe struct {
	cs           *servers.Catalogsync
	anon, mutual *http.Client
	authority    *tlstest.CA
}

// startMTLSServe starts the serve binary with --tls-* files and a client
// CA, extra args and env, and waits until the sample catalog is served.
func startMTLSServe(t *testing.T, cfgExtra string, args []string, env ...string) *mtlsServe {
	t.Helper()
	servers.CatalogsyncBinary(t) // skips under -short, before any setup
	dir := t.TempDir()
	authority, clients := tlstest.NewCA(t, "serving-ca"), tlstest.NewCA(t, "client-ca")
	crt, key, clientCA := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	c, k := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, crt, c)
	tlstest.WriteAtomic(t, key, k)
	tlstest.WriteAtomic(t, clientCA, clients.PEM)
	cfg := writeServeConfig(t, fmt.Sprintf("storage:\n  dir: %s\ncatalogs:\n- name: sample\n  image: %s\n%s", filepath.Join(dir, "store"), sample(t), cfgExtra))
	args = append([]string{"--config", cfg, "--no-docker-config", "--tls-cert-file", crt, "--tls-key-file", key, "--tls-client-ca-file", clientCA}, args...)
	cs := servers.StartCatalogsync(t, args, env...)
	cc, ck := clients.Issue(t, 2, true)
	pair, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	s := &mtlsServe{cs: cs, anon: tlstest.Client(authority.PEM, nil), mutual: tlstest.Client(authority.PEM, &pair), authority: authority}
	for i := 0; s.status(t, s.anon, "GET", "/catalogs/sample/api/v1/all") != 200; i++ {
		if i > 600 {
			t.Fatalf("the sample catalog was never served\n%s", cs.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// status sends a bodiless request and returns its status (-1: no answer).
func (s *mtlsServe) status(t *testing.T, c *http.Client, method, path string) int {
	t.Helper()
	req, err := http.NewRequest(method, s.cs.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Logf("%s %s: %v", method, path, err)
		return -1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// With a client CA, everything but catalog content and health needs a
// verified client certificate: the UI, metrics, the OpenAPI document and
// the REST API; a client with one reaches all of it, the UI's live refresh
// (GET /api/v1/catalogs) included.
func TestServeClientCertScope(t *testing.T) {
	s := startMTLSServe(t, "webhooks:\n  receivers:\n  - {name: ci, type: generic, secret: s3cret}\n", nil)
	for _, c := range []struct {
		method, path string
		anon         int
	}{
		{"GET", "/catalogs/sample/api/v1/all", 200},
		{"GET", "/catalogs/sample/api/v1/metas?schema=olm.package", 200},
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 200},
		{"GET", "/", 401},
		{"GET", "/ui/", 401},
		{"GET", "/ui/catalogs/sample/", 401},
		{"HEAD", "/ui/", 401},
		{"GET", "/metrics", 401},
		{"GET", "/openapi.yaml", 401},
		{"GET", "/api/v1/catalogs", 401},
		{"POST", "/api/v1/catalogs/sample/sync", 401},
		{"GET", "/no-such-page", 401},
	} {
		if got := s.status(t, s.anon, c.method, c.path); got != c.anon {
			t.Errorf("%s %s without a client certificate: %d, want %d", c.method, c.path, got, c.anon)
		}
		if c.anon == 401 && c.path != "/no-such-page" && c.method == "GET" {
			if got := s.status(t, s.mutual, c.method, c.path); got != 200 {
				t.Errorf("%s %s with a client certificate: %d, want 200", c.method, c.path, got)
			}
		}
	}
	// A webhook is authenticated by its receiver's secret: registries
	// present no client certificate.
	body := `{"repository":"acme/catalog"}`
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte(body))
	req, _ := http.NewRequest("POST", s.cs.URL+"/hooks/ci", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := s.anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("signed webhook without a client certificate: %d, want 2xx", resp.StatusCode)
	}
}

// --ui-open (here by its variable) serves the UI and the catalog list its
// live refresh reads to clients without a certificate; metrics, the OpenAPI
// document, the rest of the API and every POST still need one.
func TestServeClientCertUIOpen(t *testing.T) {
	s := startMTLSServe(t, "", nil, "CATALOGSYNC_UI_OPEN=true")
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", 200},
		{"GET", "/ui/", 200},
		{"GET", "/ui/catalogs/sample/", 200},
		{"GET", "/api/v1/catalogs", 200}, // the live refresh
		{"GET", "/api/v1/catalogs/sample", 401},
		{"POST", "/api/v1/catalogs", 401},
		{"POST", "/api/v1/catalogs/sample/sync", 401},
		{"GET", "/metrics", 401},
		{"GET", "/openapi.yaml", 401},
		{"GET", "/catalogs/sample/api/v1/all", 200},
	} {
		if got := s.status(t, s.anon, c.method, c.path); got != c.want {
			t.Errorf("%s %s without a client certificate, UI open: %d, want %d", c.method, c.path, got, c.want)
		}
	}
}

// --events-addr serves /events over TLS, with the same certificate, when
// TLS is configured; it needs no client certificate (the events token
// authenticates).
func TestServeEventsTLS(t *testing.T) {
	servers.CatalogsyncBinary(t) // skips under -short, before any setup
	eventsAddr := freeport.Addr(t)
	s := startMTLSServe(t, "events: {token: s3cret}\n", []string{"--events-addr", eventsAddr})
	url := "https://" + eventsAddr + "/events"
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", 401},
		{"token", "Bearer s3cret", 415}, // authenticated; a JSON body without ce- headers is no CloudEvent
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := s.anon.Do(req)
		if err != nil {
			t.Fatalf("%s: POST %s over TLS: %v", c.name, url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: POST /events: %d %s, want %d", c.name, resp.StatusCode, b, c.want)
		}
	}
	// Plain HTTP gets no event through.
	if resp, err := http.Post("http://"+eventsAddr+"/events", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("plain HTTP on the TLS events listener: %d, want 400", resp.StatusCode)
		}
	}
}

// With --ui-open, the catalogs page's live refresh works in a browser that
// has no client certificate: the list it reads is open too.
func TestServeUILiveRefreshOpen(t *testing.T) {
	servers.CatalogsyncBinary(t) // skips under -short, before any setup
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not found: `test/tools.sh chromium` installs Debian's chromium package")
	}
	s := startMTLSServe(t, "", nil, "CATALOGSYNC_UI_OPEN=true")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("ignore-certificate-errors", true)) // the test CA is not the system's
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	// A bound on a hung browser, not a measurement.
	ctx, cancel := context.WithTimeout(actx, 3*time.Minute)
	defer cancel()
	ctx, cancelC := chromedp.NewContext(ctx)
	defer cancelC()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.cs.URL+"/ui/"), chromedp.WaitReady(chromedp.CSS("#catalogs"))); err != nil {
		t.Fatalf("loading /ui/: %v", err)
	}
	// The page sets data-updated after each refresh: a time, or "error".
	var updated string
	for i := 0; updated == ""; i++ {
		if i > 300 {
			t.Fatal("the live refresh never ran")
		}
		if updated, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("catalogs").dataset.updated || ""`)); err != nil {
			t.Fatal(err)
		}
		if updated == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if updated == "error" {
		t.Errorf("the live refresh failed in a browser without a client certificate, UI open\n%s", s.cs.Log())
	}
}
