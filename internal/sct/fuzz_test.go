package sct_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/catalogsync/catalogsync/internal/sct"
)

// fixedKey is a P-256 key made from name, so that certificates and the
// fuzz seeds made with it stay the same from run to run.
func fixedKey(t testing.TB, name string) *ecdsa.PrivateKey {
	t.Helper()
	d := sha256.Sum256([]byte(name))
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fixedFixture is a fixture whose every key is fixed.
func fixedFixture(t testing.TB) *fixture {
	f := &fixture{ca: newCA(t, "test fulcio", fixedKey(t, "ca")), otherCA: newCA(t, "test fulcio", fixedKey(t, "other ca"))}
	f.log, f.otherLog = newLog(t, fixedKey(t, "log")), newLog(t, fixedKey(t, "other log"))
	f.logs = map[[32]byte]crypto.PublicKey{f.log.id: f.log.key.Public()}
	f.leafKey = fixedKey(t, "leaf").Public()
	return f
}

// certificate wraps tbs in a certificate, its signature left unchecked.
func certificate(tbs []byte) []byte {
	b := cryptobyte.NewBuilder(nil)
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(tbs)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier([]int{1, 2, 840, 10045, 4, 3, 2}) // ecdsa-with-SHA256
		})
		b.AddASN1BitString(make([]byte, 8))
	})
	return b.BytesOrPanic()
}

// FuzzVerify feeds Verify leaf TBSCertificates: it must not panic, must
// fail with one of its errors, and must accept nothing the oracle
// refuses. The seeds in testdata/fuzz hold SCTs by the fixed log.
func FuzzVerify(f *testing.F) {
	fx := fixedFixture(f)
	good := fx.signed(f, fx.log, nil)
	f.Add(fx.leaf(f, sctList(f, good)).RawTBSCertificate)
	f.Add(fx.leaf(f, sctList(f, fx.signed(f, fx.otherLog, nil), good)).RawTBSCertificate)
	f.Add(fx.leaf(f, sctList(f, fx.signed(f, fx.log, flip))).RawTBSCertificate)
	f.Fuzz(func(t *testing.T, tbs []byte) {
		err := sct.Verify(&x509.Certificate{RawTBSCertificate: tbs}, fx.ca.cert, fx.logs)
		if err != nil && !errors.Is(err, sct.ErrNoSCT) && !errors.Is(err, sct.ErrUnknownLog) && !errors.Is(err, sct.ErrInvalid) {
			t.Fatalf("Verify: %v is none of its errors", err)
		}
		leaf, perr := x509.ParseCertificate(certificate(tbs))
		if err != nil || perr != nil {
			return
		}
		if !ctAccepts(leaf, fx.ca.cert, fx.logs) {
			t.Fatal("Verify accepts what certificate-transparency-go refuses")
		}
	})
}
