package sct_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	ct "github.com/google/certificate-transparency-go"
	"github.com/google/certificate-transparency-go/ctutil"
	ctx509 "github.com/google/certificate-transparency-go/x509"
	"github.com/google/certificate-transparency-go/x509util"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/catalogsync/catalogsync/internal/certtest"
	"github.com/catalogsync/catalogsync/internal/sct"
)

// ctAccepts is the oracle: whether certificate-transparency-go, called
// as sigstore-go calls it, verifies an SCT of leaf by one of logs.
func ctAccepts(leaf, issuer *x509.Certificate, logs map[[32]byte]crypto.PublicKey) bool {
	l, _ := ctx509.ParseCertificate(leaf.Raw)
	i, _ := ctx509.ParseCertificate(issuer.Raw)
	scts, err := x509util.ParseSCTsFromCertificate(leaf.Raw)
	if l == nil || i == nil || err != nil {
		return false
	}
	for _, s := range scts {
		if key, ok := logs[s.LogID.KeyID]; ok && ctutil.VerifySCT(key, []*ctx509.Certificate{l, i}, s, true) == nil {
			return true
		}
	}
	return false
}

// verifyCase is a leaf, its issuer and trusted logs, and what Verify
// says of them; differs names why the oracle may say otherwise.
type verifyCase struct {
	name         string
	leaf, issuer *x509.Certificate
	logs         map[[32]byte]crypto.PublicKey
	want         error
	differs      string
	p384         bool // the oracle must be told to take a P-384 log key
}

type fixture struct {
	ca, otherCA   *testCA
	log, otherLog *testLog
	logs          map[[32]byte]crypto.PublicKey
	leafKey       crypto.PublicKey
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{ca: newCA(t, "test fulcio", ecKey(t, elliptic.P256())), otherCA: newCA(t, "test fulcio", ecKey(t, elliptic.P256()))}
	f.log, f.otherLog = newLog(t, ecKey(t, elliptic.P256())), newLog(t, ecKey(t, elliptic.P256()))
	f.logs = map[[32]byte]crypto.PublicKey{f.log.id: f.log.key.Public()}
	f.leafKey = ecKey(t, elliptic.P256()).Public()
	return f
}

func ecKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signed returns an SCT of l for the precertificate of the leaf with
// serial 1, changed by mutate after the log signed it.
func (f *fixture) signed(t testing.TB, l *testLog, mutate func(*ct.SignedCertificateTimestamp)) []byte {
	s := l.sct(t, f.ca.precert(t, leafTemplate(1, "dev@acme.example", f.leafKey)), f.ca.cert, 1767323045000, nil)
	if mutate != nil {
		mutate(&s)
	}
	return serialize(t, s)
}

// leaf is the certificate with serial 1 and SCT list extension value ext.
func (f *fixture) leaf(t testing.TB, ext []byte) *x509.Certificate {
	return f.ca.final(t, leafTemplate(1, "dev@acme.example", f.leafKey), ext)
}

func flip(s *ct.SignedCertificateTimestamp) { s.Signature.Signature[len(s.Signature.Signature)-1] ^= 1 }

// allowP384 makes certificate-transparency-go, and so sigstore-go, take
// P-384 log keys, as Verify does: by default it takes only P-256. It
// then takes RSA keys of less than 2048 bits too.
func allowP384(t *testing.T) {
	ct.AllowVerificationWithNonCompliantKeys = true
	t.Cleanup(func() { ct.AllowVerificationWithNonCompliantKeys = false })
}

func TestVerifyAgreesWithCertificateTransparencyGo(t *testing.T) {
	for _, c := range verifyCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.p384 {
				allowP384(t)
			}
			err := sct.Verify(c.leaf, c.issuer, c.logs)
			if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			if oracle := ctAccepts(c.leaf, c.issuer, c.logs); oracle != (err == nil) && c.differs == "" {
				t.Errorf("Verify: %v; certificate-transparency-go accepts: %v", err, oracle)
			} else if oracle == (err == nil) && c.differs != "" {
				t.Errorf("certificate-transparency-go agrees (accepts: %v) though %s", oracle, c.differs)
			}
		})
	}
}

func verifyCases(t *testing.T) []verifyCase {
	f := newFixture(t)
	return append(append(mutationCases(t, f), listCases(t, f)...), keyCases(t, f)...)
}

// mutationCases change one thing the log signed, or the certificate
// around the SCT.
func mutationCases(t *testing.T, f *fixture) []verifyCase {
	good := f.signed(t, f.log, nil)
	other := leafTemplate(2, "dev@acme.example", f.leafKey)
	otherSCT := serialize(t, f.log.sct(t, f.ca.precert(t, other), f.ca.cert, 1767323045000, nil))
	changed := leafTemplate(1, "intruder@acme.example", f.leafKey)
	withExt := f.log.sct(t, f.ca.precert(t, leafTemplate(1, "dev@acme.example", f.leafKey)), f.ca.cert, 1767323045000, []byte("log extension"))
	mutated := func(m func(*ct.SignedCertificateTimestamp)) *x509.Certificate {
		return f.leaf(t, sctList(t, f.signed(t, f.log, m)))
	}
	return []verifyCase{
		{name: "valid", leaf: f.leaf(t, sctList(t, good)), issuer: f.ca.cert, logs: f.logs},
		{name: "SCT extensions signed by the log", leaf: f.leaf(t, sctList(t, serialize(t, withExt))), issuer: f.ca.cert, logs: f.logs},
		{name: "signature flipped", leaf: mutated(flip), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "timestamp changed", leaf: mutated(func(s *ct.SignedCertificateTimestamp) { s.Timestamp++ }), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "SCT extensions added", leaf: mutated(func(s *ct.SignedCertificateTimestamp) { s.Extensions = []byte{1} }), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "SCT extensions removed", leaf: func() *x509.Certificate {
			withExt.Extensions = nil
			return f.leaf(t, sctList(t, serialize(t, withExt)))
		}(), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "version 2", leaf: mutated(func(s *ct.SignedCertificateTimestamp) { s.SCTVersion = 1 }), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "RSA claimed for an ECDSA signature", leaf: mutated(func(s *ct.SignedCertificateTimestamp) { s.Signature.Algorithm.Signature = 1 }), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "other issuer", leaf: f.leaf(t, sctList(t, good)), issuer: f.otherCA.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "SCT of another certificate", leaf: f.leaf(t, sctList(t, otherSCT)), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "certificate changed after logging", leaf: f.ca.final(t, changed, sctList(t, good)), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
		{name: "SCT list extension removed", leaf: certtest.Issue(t, leafTemplate(1, "dev@acme.example", f.leafKey), f.ca.cert, f.leafKey, f.ca.key), issuer: f.ca.cert, logs: f.logs, want: sct.ErrNoSCT},
		{name: "unknown log", leaf: f.leaf(t, sctList(t, good)), issuer: f.ca.cert, logs: map[[32]byte]crypto.PublicKey{f.otherLog.id: f.otherLog.key.Public()}, want: sct.ErrUnknownLog},
		{name: "no trusted log", leaf: f.leaf(t, sctList(t, good)), issuer: f.ca.cert, want: sct.ErrUnknownLog},
		{name: "unknown log then valid", leaf: f.leaf(t, sctList(t, f.signed(t, f.otherLog, nil), good)), issuer: f.ca.cert, logs: f.logs},
		{name: "invalid then valid", leaf: f.leaf(t, sctList(t, f.signed(t, f.log, flip), good)), issuer: f.ca.cert, logs: f.logs},
		{name: "two invalid", leaf: f.leaf(t, sctList(t, f.signed(t, f.log, flip), otherSCT)), issuer: f.ca.cert, logs: f.logs, want: sct.ErrInvalid},
	}
}

// listCases break the SCT list's encoding.
func listCases(t *testing.T, f *fixture) []verifyCase {
	good := f.signed(t, f.log, nil)
	list := sctList(t, good, good)
	inner := list[2:] // the TLS list inside the OCTET STRING's short header
	var cs []verifyCase
	for _, n := range []int{0, 1, 2, 3, 40, len(good), len(good) + 2, len(inner) - 1} {
		cs = append(cs,
			verifyCase{name: fmt.Sprintf("TLS list cut to %d bytes", n), leaf: f.leaf(t, octets(t, inner[:n])), want: sct.ErrInvalid},
			verifyCase{name: fmt.Sprintf("DER cut to %d bytes", n), leaf: f.leaf(t, list[:n]), want: sct.ErrInvalid})
	}
	garbage := make([]byte, 300)
	rand.Read(garbage)
	tooMany := make([][]byte, 17)
	for i := range tooMany {
		tooMany[i] = good
	}
	cs = append(cs,
		verifyCase{name: "garbage", leaf: f.leaf(t, garbage), want: sct.ErrInvalid},
		verifyCase{name: "garbage in the OCTET STRING", leaf: f.leaf(t, octets(t, garbage)), want: sct.ErrInvalid},
		verifyCase{name: "empty list", leaf: f.leaf(t, octets(t, []byte{0, 0})), want: sct.ErrInvalid},
		verifyCase{name: "trailing byte after the list", leaf: f.leaf(t, octets(t, append(inner, 0))), want: sct.ErrInvalid},
		verifyCase{name: "trailing byte after the OCTET STRING", leaf: f.leaf(t, append(list, 0)), want: sct.ErrInvalid},
		verifyCase{name: "17 SCTs", leaf: f.leaf(t, sctList(t, tooMany...)), want: sct.ErrInvalid, differs: "more than 16 SCTs are refused unread"},
		verifyCase{name: "TBSCertificate over 64 KiB", leaf: bigLeaf(t, f), want: sct.ErrInvalid, differs: "TBSCertificates over 64 KiB are refused unread"})
	for i := range cs {
		cs[i].issuer, cs[i].logs = f.ca.cert, f.logs
	}
	return cs
}

// bigLeaf is a certificate of 64 KiB and more with a valid SCT.
func bigLeaf(t *testing.T, f *fixture) *x509.Certificate {
	big := leafTemplate(3, "dev@acme.example", f.leafKey)
	big.ExtraExtensions = append(big.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{1, 2, 3}, Value: make([]byte, 64<<10)})
	s := f.log.sct(t, f.ca.precert(t, big), f.ca.cert, 1767323045000, nil)
	return f.ca.final(t, big, sctList(t, serialize(t, s)))
}

// keyCases sign with each kind of log key.
func keyCases(t *testing.T, f *fixture) []verifyCase {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // G403: too weak on purpose, Verify must refuse it
	if err != nil {
		t.Fatal(err)
	}
	sha384 := newLog(t, ecKey(t, elliptic.P256()))
	sha384.hash = crypto.SHA384
	var cs []verifyCase
	for _, l := range []struct {
		name    string
		log     *testLog
		differs string
	}{
		{"RSA", newLog(t, rsaKey), ""},
		{"P-384", newLog(t, ecKey(t, elliptic.P384())), ""},
		{"Ed25519", newLog(t, edKey), "certificate-transparency-go has no Ed25519"},
	} {
		p384 := l.name == "P-384"
		logs := map[[32]byte]crypto.PublicKey{l.log.id: l.log.key.Public()}
		cs = append(cs,
			verifyCase{name: l.name, leaf: f.leaf(t, sctList(t, f.signed(t, l.log, nil))), issuer: f.ca.cert, logs: logs, differs: l.differs, p384: p384},
			verifyCase{name: l.name + " flipped", leaf: f.leaf(t, sctList(t, f.signed(t, l.log, flip))), issuer: f.ca.cert, logs: logs, want: sct.ErrInvalid, p384: p384})
	}
	weakLog := newLog(t, weak)
	cs = append(cs, verifyCase{name: "RSA of 1024 bits", leaf: f.leaf(t, sctList(t, f.signed(t, weakLog, nil))), issuer: f.ca.cert,
		logs: map[[32]byte]crypto.PublicKey{weakLog.id: weak.Public()}, want: sct.ErrInvalid})
	return append(cs, verifyCase{name: "SHA-384", leaf: f.leaf(t, sctList(t, f.signed(t, sha384, nil))), issuer: f.ca.cert,
		logs: map[[32]byte]crypto.PublicKey{sha384.id: sha384.key.Public()}, want: sct.ErrInvalid, differs: "RFC 6962 logs sign with SHA-256"})
}

// TestVerifyPublicGoodCertificates verifies certificates of the public
// Sigstore instance, with the Fulcio CAs and CT log keys of its trusted
// root (testdata/publicgood, from sigstore-go's test data).
func TestVerifyPublicGoodCertificates(t *testing.T) {
	cas := readPEM(t, "testdata/publicgood/fulcio.pem")
	logs := map[[32]byte]crypto.PublicKey{}
	for _, der := range readPEM(t, "testdata/publicgood/ctlogs.pem") {
		key, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			t.Fatal(err)
		}
		logs[sha256.Sum256(der)] = key
	}
	leaves := readPEM(t, "testdata/publicgood/leaves.pem")
	for i, der := range leaves {
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		var issuer, other *x509.Certificate
		for _, der := range cas {
			ca, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			if leaf.CheckSignatureFrom(ca) == nil {
				issuer = ca
			} else if ca.IsCA && !bytes.Equal(ca.RawSubjectPublicKeyInfo, leaf.RawSubjectPublicKeyInfo) {
				other = ca
			}
		}
		if issuer == nil || other == nil {
			t.Fatalf("leaf %d: no issuer among %d CA certificates", i, len(cas))
		}
		if err := sct.Verify(leaf, issuer, logs); err != nil || !ctAccepts(leaf, issuer, logs) {
			t.Errorf("leaf %d (%s): Verify: %v, certificate-transparency-go accepts: %v", i, leaf.NotBefore, err, ctAccepts(leaf, issuer, logs))
		}
		if err := sct.Verify(leaf, other, logs); !errors.Is(err, sct.ErrInvalid) {
			t.Errorf("leaf %d with another issuer: Verify: %v, want %v", i, err, sct.ErrInvalid)
		}
	}
}

func TestVerifyRefusesMissingCertificates(t *testing.T) {
	f := newFixture(t)
	leaf := f.leaf(t, sctList(t, f.signed(t, f.log, nil)))
	for _, c := range []struct {
		name         string
		leaf, issuer *x509.Certificate
	}{
		{"no leaf", nil, f.ca.cert},
		{"no issuer", leaf, nil},
		{"leaf without TBSCertificate", &x509.Certificate{}, f.ca.cert},
	} {
		if err := sct.Verify(c.leaf, c.issuer, f.logs); !errors.Is(err, sct.ErrInvalid) {
			t.Errorf("%s: Verify: %v, want %v", c.name, err, sct.ErrInvalid)
		}
	}
}

func readPEM(t *testing.T, name string) [][]byte {
	t.Helper()
	rest, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var ders [][]byte
	for b, rest := pem.Decode(rest); b != nil; b, rest = pem.Decode(rest) {
		ders = append(ders, b.Bytes)
	}
	return ders
}

// TestVerifyRefusesNonDERTBSCertificate changes the encoding of a leaf
// whose SCT is valid: what is not DER is refused, not re-encoded.
func TestVerifyRefusesNonDERTBSCertificate(t *testing.T) {
	f := newFixture(t)
	list := sctList(t, f.signed(t, f.log, nil))
	tbs := f.leaf(t, list).RawTBSCertificate
	dup, err := asn1.Marshal(pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}, Value: list})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tbs  []byte
	}{
		{"byte after the TBSCertificate", append(slices.Clone(tbs), 0)},
		{"length not in its shortest form", append([]byte{0x30, 0x83, 0}, tbs[2:]...)},
		{"NULL after the extensions", withExtensions(t, tbs, func(b *cryptobyte.Builder, exts []byte) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddBytes(exts) })
			b.AddBytes([]byte{0x05, 0x00})
		})},
		{"SCT list extension twice", withExtensions(t, tbs, func(b *cryptobyte.Builder, exts []byte) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddBytes(exts); b.AddBytes(dup) })
		})},
		{"SCT list extension's critical flag of 2 bytes", withExtensions(t, tbs, func(b *cryptobyte.Builder, exts []byte) {
			if !bytes.HasSuffix(exts, dup) {
				t.Fatal("the SCT list extension is not last")
			}
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddBytes(exts[:len(exts)-len(dup)])
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1ObjectIdentifier([]int{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2})
					b.AddASN1(cbasn1.BOOLEAN, func(b *cryptobyte.Builder) { b.AddBytes([]byte{1, 1}) })
					b.AddASN1OctetString(list)
				})
			})
		})},
	} {
		if err := sct.Verify(&x509.Certificate{RawTBSCertificate: c.tbs}, f.ca.cert, f.logs); !errors.Is(err, sct.ErrInvalid) {
			t.Errorf("%s: Verify: %v, want %v", c.name, err, sct.ErrInvalid)
		}
	}
	if err := sct.Verify(&x509.Certificate{RawTBSCertificate: tbs}, f.ca.cert, f.logs); err != nil {
		t.Errorf("unchanged: Verify: %v", err)
	}
}

// withExtensions returns tbs with the content of its extensions field,
// [3], made by add from the extensions it holds.
func withExtensions(t *testing.T, tbs []byte, add func(b *cryptobyte.Builder, exts []byte)) []byte {
	tag := cbasn1.Tag(3).Constructed().ContextSpecific()
	in := cryptobyte.String(tbs)
	var body cryptobyte.String
	if !in.ReadASN1(&body, cbasn1.SEQUENCE) {
		t.Fatal("TBSCertificate is not a SEQUENCE")
	}
	b := cryptobyte.NewBuilder(nil)
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for !body.Empty() {
			var field, wrapped, exts cryptobyte.String
			var ftag cbasn1.Tag
			if !body.ReadAnyASN1Element(&field, &ftag) {
				t.Fatal("TBSCertificate field is not DER")
			}
			if ftag != tag || !field.ReadASN1(&wrapped, tag) || !wrapped.ReadASN1(&exts, cbasn1.SEQUENCE) {
				b.AddBytes(field)
				continue
			}
			b.AddASN1(tag, func(b *cryptobyte.Builder) { add(b, exts) })
		}
	})
	return b.BytesOrPanic()
}

// windowCase is a valid SCT's log trusted for a time, and what
// VerifyLogs says.
type windowCase struct {
	name       string
	start, end time.Time
	want       error
}

func windowCases(t *testing.T) (*fixture, *x509.Certificate, []windowCase) {
	f := newFixture(t)
	leaf := f.leaf(t, sctList(t, f.signed(t, f.log, nil)))
	at := time.UnixMilli(1767323045000) // the SCT's timestamp
	return f, leaf, []windowCase{
		{name: "always"},
		{name: "around", start: at.Add(-time.Hour), end: at.Add(time.Hour)},
		{name: "from then", start: at},
		{name: "until then", end: at},
		{name: "from later", start: at.Add(time.Millisecond), want: sct.ErrUnknownLog},
		{name: "until before", end: at.Add(-time.Millisecond), want: sct.ErrUnknownLog},
	}
}

func TestVerifyLogsSkipsSCTsOutsideTheirLogsTime(t *testing.T) {
	f, leaf, cases := windowCases(t)
	for _, c := range cases {
		logs := map[[32]byte]sct.Log{f.log.id: {Key: f.log.key.Public(), Start: c.start, End: c.end}}
		if err := sct.VerifyLogs(leaf, f.ca.cert, logs); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("%s: VerifyLogs: %v, want %v", c.name, err, c.want)
		}
	}
}
