package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
)

// TestServeHTTPS: serve with --tls-* files answers /all over HTTPS to a
// client trusting only the test CA, GraphQL too, and with a client CA
// keeps the REST API for clients with a certificate.
func TestServeHTTPS(t *testing.T) {
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
