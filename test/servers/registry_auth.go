package servers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestCA is a certificate authority made for one test: registries started
// WithTLS serve a certificate it signed for 127.0.0.1.
type TestCA struct {
	CertPEM  []byte // the CA certificate, PEM
	CertFile string // CertPEM written to a file
	Pool     *x509.CertPool

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewTestCA makes a CA and writes its certificate into t.TempDir().
func NewTestCA(t testing.TB) *TestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "catalogsync test CA " + randomHex(t, 4)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &TestCA{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	ca.CertFile = filepath.Join(t.TempDir(), "ca.crt")
	writeFile(t, ca.CertFile, string(ca.CertPEM))
	return ca
}

// serverCert writes a key and a certificate for 127.0.0.1 and localhost
// signed by the CA into dir.
func (ca *TestCA) serverCert(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// secure is the TLS and authentication part of a registry's configuration.
type secure struct {
	ca    *TestCA
	users map[string]string
}

// WithTLS serves HTTPS with a certificate for 127.0.0.1 signed by ca.
func WithTLS(ca *TestCA) RegistryOption { return func(c *registryConfig) { c.secure.ca = ca } }

// WithHtpasswd requires basic or token-less htpasswd authentication for
// every request; users maps user names to passwords (bcrypt-hashed into
// the registry's htpasswd file). Distribution allows htpasswd only with TLS.
func WithHtpasswd(users map[string]string) RegistryOption {
	return func(c *registryConfig) { c.secure.users = users }
}

func (s secure) scheme() string {
	if s.ca != nil {
		return "https"
	}
	return "http"
}

// client is the readiness probe's client: it trusts the test CA.
func (s secure) client() *http.Client {
	if s.ca == nil {
		return plainClient
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool},
	}}
}

// readyHeader authenticates the readiness probe as the first user.
func (s secure) readyHeader() http.Header {
	if len(s.users) == 0 {
		return nil
	}
	names := make([]string, 0, len(s.users))
	for u := range s.users {
		names = append(names, u)
	}
	sort.Strings(names)
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(names[0], s.users[names[0]])
	return req.Header
}

// apply writes the certificate and htpasswd files into dir and adds them
// to the registry configuration cfg.
func (s secure) apply(cfg map[string]any, dir, host string) error {
	httpCfg := cfg["http"].(map[string]any)
	if s.ca != nil {
		certFile, keyFile, err := s.ca.serverCert(dir)
		if err != nil {
			return err
		}
		httpCfg["tls"] = map[string]any{"certificate": certFile, "key": keyFile}
	}
	if len(s.users) == 0 {
		return nil
	}
	var b strings.Builder
	for u, p := range s.users {
		h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	path := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return err
	}
	cfg["auth"] = map[string]any{"htpasswd": map[string]any{"realm": "catalogsync-test " + host, "path": path}}
	return nil
}

// SetUsers replaces the registry's htpasswd users; the registry reads the
// file when it starts, so call it between Stop and Start.
func (r *Registry) SetUsers(users map[string]string) {
	r.t.Helper()
	r.rc.secure.users = users
	if err := r.writeConfig(r.rc); err != nil {
		r.t.Fatalf("servers: registry users: %v", err)
	}
}
