package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/internal/tlsreload/tlstest"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// tlsServe runs serve over HTTPS with args and returns its address and
// the CA that signed its certificate, once it completes a TLS 1.3
// handshake.
func tlsServe(t *testing.T, args ...string) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	authority := tlstest.NewCA(t, "serving-ca")
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c, k := authority.Issue(t, 1, false)
	tlstest.WriteAtomic(t, crt, c)
	tlstest.WriteAtomic(t, key, k)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(authority.PEM)
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	logs := &logbuf.Buffer{}
	go func() {
		done <- run(ctx, append([]string{"serve", "--store", filepath.Join(dir, "store"), "--addr", addr, "--no-docker-config",
			"--tls-cert-file", crt, "--tls-key-file", key}, args...), &bytes.Buffer{}, logs)
	}()
	t.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		if _, err := handshake(addr, pool, tls.VersionTLS13, 0); err == nil {
			return addr, pool
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, logs.String())
		default:
		}
		if i > 600 {
			t.Fatalf("serve never answered over TLS:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// handshake connects to addr offering versions up to maxVersion and, when
// not 0, only the TLS 1.2 cipher suite; it returns the state agreed.
func handshake(addr string, pool *x509.CertPool, maxVersion, suite uint16) (tls.ConnectionState, error) {
	cfg := &tls.Config{RootCAs: pool, MaxVersion: maxVersion, NextProtos: []string{"h2"}}
	if suite != 0 {
		cfg.CipherSuites = []uint16{suite}
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

// The profiles as a client sees them: intermediate (the default) takes
// TLS 1.2 with an AEAD cipher but not a CBC one, modern refuses TLS 1.2,
// custom offers its minimum version and its ciphers only.
func TestServeTLSProfiles(t *testing.T) {
	const gcm128, gcm256, cbc = tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA
	cases := []struct {
		args    []string
		max     uint16
		suite   uint16
		refused bool
	}{
		{nil, tls.VersionTLS12, gcm256, false},
		{nil, tls.VersionTLS12, cbc, true},
		{[]string{"--tls-profile", "modern"}, tls.VersionTLS12, 0, true},
		{[]string{"--tls-profile", "custom", "--tls-custom-version", "TLSv1.3"}, tls.VersionTLS12, 0, true},
		{[]string{"--tls-profile", "custom", "--tls-custom-ciphers", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, tls.VersionTLS12, gcm128, false},
		{[]string{"--tls-profile", "custom", "--tls-custom-ciphers", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, tls.VersionTLS12, gcm256, true},
		{[]string{"--tls-profile", "custom", "--tls-custom-ciphers", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"}, tls.VersionTLS12, cbc, false},
	}
	type served struct {
		addr string
		pool *x509.CertPool
	}
	started := map[string]served{}
	for _, c := range cases {
		key := strings.Join(c.args, " ")
		s, ok := started[key]
		if !ok {
			s.addr, s.pool = tlsServe(t, c.args...)
			started[key] = s
		}
		st, err := handshake(s.addr, s.pool, c.max, c.suite)
		switch {
		case c.refused && err == nil:
			t.Errorf("%q: a TLS %x client with suite %x connected (%x, %x)", c.args, c.max, c.suite, st.Version, st.CipherSuite)
		case !c.refused && err != nil:
			t.Errorf("%q: a TLS %x client with suite %x was refused: %v", c.args, c.max, c.suite, err)
		case !c.refused && (st.Version != c.max || (c.suite != 0 && st.CipherSuite != c.suite)):
			t.Errorf("%q: agreed %x %x", c.args, st.Version, st.CipherSuite)
		}
	}
}

// A cipher name that is not one stops serve at start, exit 2, naming it
// and what would do; so does a profile catalogsync does not have.
func TestServeTLSProfileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--tls-profile", "custom", "--tls-custom-ciphers", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256"},
			`TLS settings: unknown cipher "ECDHE-RSA-AES128-GCM-SHA256": want Go's TLS 1.2 cipher suite names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (--tls-profile custom)`},
		{[]string{"--tls-profile", "old"}, `TLS settings: unknown profile "old": want one of intermediate, modern, custom`},
		{[]string{"--tls-profile", "modern", "--tls-custom-version", "TLSv1.2"}, "a minimum version and ciphers are set with the custom profile only"},
		{[]string{"--tls-profile", "modern"}, "--tls-profile and --tls-custom-* apply to HTTPS: give --tls-cert-file and --tls-key-file too"},
		{[]string{"--tls-profile", "custom", "--tls-custom-version", "TLSv1.3"}, "apply to HTTPS: give --tls-cert-file"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, append([]string{"serve", "--store", dir, "--addr", "127.0.0.1:0", "--no-docker-config"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", c.args, code, c.want, stderr)
		}
	}
}
