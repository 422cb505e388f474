package source

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// check reads every configured bundle, so a bad one fails at start, but
// builds no pool: the system's roots are loaded at the first TLS dial,
// not by every sync that never dials TLS.
func TestTrustCheckReadsBundlesBuildsNoPool(t *testing.T) {
	good := writeSelfSignedPEM(t)
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := newTrust(&options{caFiles: []string{good}, hosts: []Host{{Name: "Reg.Example:5000", CAFile: good}}})
	if err := tr.check(); err != nil {
		t.Fatalf("check with good bundles: %v", err)
	}
	if len(tr.byHost) != 0 {
		t.Errorf("check built %d pools, want none before a dial", len(tr.byHost))
	}
	for _, o := range []*options{
		{caFiles: []string{good, bad}},
		{caFiles: []string{good}, hosts: []Host{{Name: "r", CAFile: bad}}},
		{hosts: []Host{{Name: "r", CAFile: filepath.Join(t.TempDir(), "missing.pem")}}},
	} {
		if err := newTrust(o).check(); !errors.Is(err, ErrTrust) {
			t.Errorf("check(%v, %v) = %v, want ErrTrust", o.caFiles, o.hosts, err)
		}
	}
}

func writeSelfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
