package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
)

// TestMutualTLSOpensOnlyContentAndProbes serves HTTPS with a client CA:
// catalog content and the probes answer clients without a certificate,
// /metrics and unknown paths need one.
func TestMutualTLSOpensOnlyContentAndProbes(t *testing.T) {
	dir := t.TempDir()
	syncSample(t, "sample", nil, "--store", dir)
	ca := tlstest.NewCA(t, "reader-ca")
	certPEM, keyPEM := ca.Issue(t, 2, false)
	clientPEM, clientKey := ca.Issue(t, 3, true)
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.PEM}
	for name, b := range files {
		tlstest.WriteAtomic(t, filepath.Join(dir, name), b)
	}
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--store", dir, "--addr", addr, "--tls-cert-file", filepath.Join(dir, "tls.crt"),
			"--tls-key-file", filepath.Join(dir, "tls.key"), "--tls-client-ca-file", filepath.Join(dir, "ca.crt")}, io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	anon := tlstest.Client(ca.PEM, nil)
	cert, err := tls.X509KeyPair(clientPEM, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	withCert := tlstest.Client(ca.PEM, &cert)
	status := func(c *http.Client, path string) int {
		for i := 0; ; i++ {
			resp, err := c.Get("https://" + addr + path)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if i > 1000 {
				t.Fatalf("%s: %v\n%s", path, err, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		client *http.Client
		path   string
		want   int
	}{
		{anon, "/catalogs/sample/api/v1/all", http.StatusOK},
		{anon, "/readyz", http.StatusOK},
		{anon, "/healthz", http.StatusOK},
		{anon, "/metrics", http.StatusUnauthorized},
		{anon, "/elsewhere", http.StatusUnauthorized},
		{withCert, "/metrics", http.StatusOK},
	} {
		if got := status(c.client, c.path); got != c.want {
			t.Errorf("%s (certificate %v): %d, want %d", c.path, c.client == withCert, got, c.want)
		}
	}
}
