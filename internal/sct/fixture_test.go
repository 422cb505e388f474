package sct_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"

	ct "github.com/google/certificate-transparency-go"
	cttls "github.com/google/certificate-transparency-go/tls"
	ctx509 "github.com/google/certificate-transparency-go/x509"

	"github.com/catalogsync/catalogsync/internal/certtest"
)

var (
	oidPoison  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 3}
	oidSCTList = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}
	// notBefore is fixed so that a template gives the same TBSCertificate
	// in every run (the fuzz seeds hold SCTs over it).
	notBefore = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// testCA signs certificates as a CA like Fulcio does: a precertificate
// (with the poison extension) to log, then the certificate with the SCTs.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newCA(t testing.TB, name string, key crypto.Signer) *testCA {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	return &testCA{cert: certtest.Issue(t, tmpl, tmpl, key.Public(), key), key: key}
}

// leafTemplate is a short-lived code signing certificate like Fulcio's.
func leafTemplate(serial int64, email string, pub crypto.PublicKey) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial), EmailAddresses: []string{email},
		NotBefore: notBefore, NotAfter: notBefore.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		PublicKey: pub,
		ExtraExtensions: []pkix.Extension{
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte("https://issuer.example")},
		},
	}
}

// precert signs tmpl with the poison extension last.
func (ca *testCA) precert(t testing.TB, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	pre := *tmpl
	pre.ExtraExtensions = append(append([]pkix.Extension(nil), tmpl.ExtraExtensions...),
		pkix.Extension{Id: oidPoison, Critical: true, Value: []byte{0x05, 0x00}})
	return certtest.Issue(t, &pre, ca.cert, tmpl.PublicKey, ca.key)
}

// final signs tmpl with an SCT list extension of value ext last, where
// the precertificate had the poison extension.
func (ca *testCA) final(t testing.TB, tmpl *x509.Certificate, ext []byte) *x509.Certificate {
	t.Helper()
	c := *tmpl
	c.ExtraExtensions = append(append([]pkix.Extension(nil), tmpl.ExtraExtensions...),
		pkix.Extension{Id: oidSCTList, Value: ext})
	return certtest.Issue(t, &c, ca.cert, tmpl.PublicKey, ca.key)
}

// testLog is a CT log: it signs SCTs for precertificates as RFC 6962
// §3.2 says, with the entry certificate-transparency-go builds for logs.
type testLog struct {
	key  crypto.Signer
	id   [32]byte
	hash crypto.Hash // of the signature; crypto.Hash(0) for Ed25519
}

func newLog(t testing.TB, key crypto.Signer) *testLog {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	l := &testLog{key: key, id: sha256.Sum256(der), hash: crypto.SHA256}
	if _, ok := key.(ed25519.PrivateKey); ok {
		l.hash = 0
	}
	return l
}

// sct returns the SCT the log returns for pre at time ts, with SCT
// extensions ext, as the log's TLS struct (mutable before serializing).
func (l *testLog) sct(t testing.TB, pre, issuer *x509.Certificate, ts uint64, ext []byte) ct.SignedCertificateTimestamp {
	t.Helper()
	chain := []*ctx509.Certificate{ctCert(t, pre), ctCert(t, issuer)}
	leaf, err := ct.MerkleTreeLeafFromChain(chain, ct.PrecertLogEntryType, ts)
	if err != nil {
		t.Fatal(err)
	}
	leaf.TimestampedEntry.Extensions = ext
	s := ct.SignedCertificateTimestamp{SCTVersion: ct.V1, LogID: ct.LogID{KeyID: l.id}, Timestamp: ts, Extensions: ext}
	data, err := ct.SerializeSCTSignatureInput(s, ct.LogEntry{Leaf: *leaf})
	if err != nil {
		t.Fatal(err)
	}
	s.Signature = l.sign(t, data)
	return s
}

func (l *testLog) sign(t testing.TB, data []byte) ct.DigitallySigned {
	t.Helper()
	var ds ct.DigitallySigned
	digest := data
	switch l.hash {
	case crypto.SHA256:
		d := sha256.Sum256(data)
		digest, ds.Algorithm.Hash = d[:], cttls.SHA256
	case crypto.SHA384:
		d := sha512.Sum384(data)
		digest, ds.Algorithm.Hash = d[:], cttls.SHA384
	default:
		ds.Algorithm.Hash = 8 // intrinsic
	}
	switch l.key.(type) {
	case *ecdsa.PrivateKey:
		ds.Algorithm.Signature = cttls.ECDSA
	case *rsa.PrivateKey:
		ds.Algorithm.Signature = cttls.RSA
	default:
		ds.Algorithm.Signature = 7 // ed25519
	}
	var err error
	if ds.Signature, err = l.key.Sign(rand.Reader, digest, l.hash); err != nil {
		t.Fatal(err)
	}
	return ds
}

// serialize TLS-encodes one SCT as it sits in a list.
func serialize(t testing.TB, s ct.SignedCertificateTimestamp) []byte {
	t.Helper()
	b, err := cttls.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sctList is the SCT list extension's value holding scts.
func sctList(t testing.TB, scts ...[]byte) []byte {
	t.Helper()
	var l ctx509.SignedCertificateTimestampList
	for _, s := range scts {
		l.SCTList = append(l.SCTList, ctx509.SerializedSCT{Val: s})
	}
	b, err := cttls.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return octets(t, b)
}

func octets(t testing.TB, b []byte) []byte {
	t.Helper()
	der, err := asn1.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func ctCert(t testing.TB, c *x509.Certificate) *ctx509.Certificate {
	t.Helper()
	cc, err := ctx509.ParseCertificate(c.Raw)
	if cc == nil {
		t.Fatal(err)
	}
	return cc
}
