package sigverify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/catalogsync/catalogsync/internal/certtest"
)

// virtual is an in-test sigstore, as sigstore-go's testing/ca makes one
// (which this module cannot build: it links rekor's PGP support): a root
// CA with a Fulcio intermediate and a timestamp authority below its own
// intermediate, a Rekor v1 log and a CT log.
type virtual struct {
	root, inter, tsaInter, tsaLeaf *x509.Certificate
	rootKey, interKey, tsaKey      *ecdsa.PrivateKey
	rekorKey, ctKey                *ecdsa.PrivateKey
}

var (
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
)

func newVirtual(t testing.TB) *virtual {
	t.Helper()
	v := &virtual{rootKey: certtest.Key(t), interKey: certtest.Key(t), tsaKey: certtest.Key(t), rekorKey: certtest.Key(t), ctKey: certtest.Key(t)}
	now := time.Now()
	ca := func(name string, eku x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-5 * time.Hour), NotAfter: now.Add(5 * time.Hour),
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, ExtKeyUsage: []x509.ExtKeyUsage{eku},
			IsCA: true, BasicConstraintsValid: true,
		}
	}
	rootTmpl := ca("sigstore", x509.ExtKeyUsageAny)
	rootTmpl.ExtKeyUsage = nil
	v.root = certtest.Issue(t, rootTmpl, rootTmpl, &v.rootKey.PublicKey, v.rootKey)
	v.inter = certtest.Issue(t, ca("sigstore-intermediate", x509.ExtKeyUsageCodeSigning), v.root, &v.interKey.PublicKey, v.rootKey)
	tsaInterKey := certtest.Key(t)
	v.tsaInter = certtest.Issue(t, ca("sigstore-tsa-intermediate", x509.ExtKeyUsageTimeStamping), v.root, &tsaInterKey.PublicKey, v.rootKey)
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	if err != nil {
		t.Fatal(err)
	}
	v.tsaLeaf = certtest.Issue(t, &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "tsa"},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}},
	}, v.tsaInter, &v.tsaKey.PublicKey, tsaInterKey)
	return v
}

var serials int64

func serial() *big.Int { serials++; return big.NewInt(serials) }

// leaf issues a 10-minute signing certificate from from to identity (a
// URI or an email) with issuer in Fulcio's extension (the legacy one when
// legacy), then the extra extensions.
func (v *virtual) leaf(t testing.TB, identity, issuer string, legacy bool, from time.Time, withSCT bool, extra ...pkix.Extension) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := certtest.Key(t)
	ext := pkix.Extension{Id: oidIssuerV1, Value: []byte(issuer)}
	if !legacy {
		val, err := asn1.MarshalWithParams(issuer, "utf8")
		if err != nil {
			t.Fatal(err)
		}
		ext = pkix.Extension{Id: oidIssuerV2, Value: val}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), NotBefore: from, NotAfter: from.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: append([]pkix.Extension{ext}, extra...),
	}
	if u, err := url.Parse(identity); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{identity}
	}
	if withSCT {
		// The log signs the precertificate: this TBS without the SCT
		// list, which goes last.
		pre := certtest.Issue(t, tmpl, v.inter, &key.PublicKey, v.interKey)
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: oidSCTList, Value: v.sctList(t, pre.RawTBSCertificate, from)})
	}
	return certtest.Issue(t, tmpl, v.inter, &key.PublicKey, v.interKey), key
}

var oidSCTList = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}

// sctList is the SCT list extension's value: one SCT of the CT log over
// the precertificate entry (RFC 6962 §3.2), dated at.
func (v *virtual) sctList(t testing.TB, tbs []byte, at time.Time) []byte {
	t.Helper()
	issuerKeyHash := sha256.Sum256(v.inter.RawSubjectPublicKeyInfo)
	ms := binary.BigEndian.AppendUint64(nil, uint64(at.UnixMilli()))
	signed := append([]byte{0, 0}, ms...) // v1, certificate_timestamp
	signed = append(signed, 0, 1)         // precert_entry
	signed = append(signed, issuerKeyHash[:]...)
	signed = append(signed, byte(len(tbs)>>16), byte(len(tbs)>>8), byte(len(tbs)))
	signed = append(signed, tbs...)
	signed = append(signed, 0, 0) // no extensions
	sum := sha256.Sum256(signed)
	sig, err := ecdsa.SignASN1(rand.Reader, v.ctKey, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	one := append([]byte{0}, logID(&v.ctKey.PublicKey)...)
	one = append(one, ms...)
	one = append(one, 0, 0, 4, 3) // no extensions; SHA-256, ECDSA
	one = binary.BigEndian.AppendUint16(one, uint16(len(sig)))
	one = append(one, sig...)
	list := binary.BigEndian.AppendUint16(nil, uint16(len(one)+2))
	list = binary.BigEndian.AppendUint16(list, uint16(len(one)))
	der, err := asn1.Marshal(append(list, one...))
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// timestamp is the authority's RFC 3161 response for sig, at now.
func (v *virtual) timestamp(t testing.TB, sig []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(sig)
	ts := timestamp.Timestamp{HashAlgorithm: crypto.SHA256, HashedMessage: sum[:], Time: time.Now(), Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}}
	resp, err := ts.CreateResponseWithOpts(v.tsaLeaf, v.tsaKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func logID(pub crypto.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return sum[:]
}

// entry logs body at integratedTime with an inclusion promise and, when
// proof, an inclusion proof (the second leaf of a tree of two) with its
// checkpoint.
func (v *virtual) entry(t testing.TB, kind string, body []byte, integratedTime int64, proof bool) *protorekor.TransparencyLogEntry {
	t.Helper()
	id := logID(&v.rekorKey.PublicKey)
	const index = 1
	set, err := json.Marshal(map[string]any{"body": base64.StdEncoding.EncodeToString(body), "integratedTime": integratedTime, "logID": hex.EncodeToString(id), "logIndex": index})
	if err != nil {
		t.Fatal(err)
	}
	e := &protorekor.TransparencyLogEntry{
		LogIndex: index, LogId: &protocommon.LogId{KeyId: id}, IntegratedTime: integratedTime,
		KindVersion:       &protorekor.KindVersion{Kind: kind, Version: "0.0.1"},
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: v.sign(t, set)},
		CanonicalizedBody: body,
	}
	if proof {
		sibling := rfc6962.DefaultHasher.HashLeaf([]byte("an earlier entry"))
		rootHash := rfc6962.DefaultHasher.HashChildren(sibling, rfc6962.DefaultHasher.HashLeaf(body))
		e.InclusionProof = &protorekor.InclusionProof{
			LogIndex: index, TreeSize: 2, RootHash: rootHash, Hashes: [][]byte{sibling},
			Checkpoint: &protorekor.Checkpoint{Envelope: v.checkpoint(t, 2, rootHash)},
		}
	}
	return e
}

func (v *virtual) sign(t testing.TB, msg []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(msg)
	sig, err := ecdsa.SignASN1(rand.Reader, v.rekorKey, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// checkpoint is the log's signed note on its tree.
func (v *virtual) checkpoint(t testing.TB, size int, rootHash []byte) string {
	text := fmt.Sprintf("rekor.localhost - 123\n%d\n%s\n", size, base64.StdEncoding.EncodeToString(rootHash))
	hint := logID(&v.rekorKey.PublicKey)[:4]
	return text + "\n\u2014 rekor.localhost " + base64.StdEncoding.EncodeToString(append(hint, v.sign(t, []byte(text))...)) + "\n"
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// hashedrekord is the body Rekor logs for a message signature.
func hashedrekord(digest, sig []byte, cert *x509.Certificate) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(digest)}},
		"signature": map[string]any{"content": sig, "publicKey": map[string]any{"content": certPEM(cert)}},
	}})
	return b
}

// dsseEntry is the body Rekor logs for a DSSE envelope.
func dsseEntry(envelope, payload, sig []byte, cert *x509.Certificate) []byte {
	eh, ph := sha256.Sum256(envelope), sha256.Sum256(payload)
	b, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "dsse", "spec": map[string]any{
		"envelopeHash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(eh[:])},
		"payloadHash":  map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(ph[:])},
		"signatures":   []any{map[string]any{"signature": base64.StdEncoding.EncodeToString(sig), "verifier": certPEM(cert)}},
	}})
	return b
}

// trustedRoot is the trusted_root.json of v's authorities, the log of
// logs and the CT log of ct (none when nil); sigstore-go writes it.
func (v *virtual) trustedRoot(t testing.TB, logs, ct *virtual) []byte {
	t.Helper()
	now := time.Now()
	tlog := func(k *ecdsa.PrivateKey) map[string]*root.TransparencyLog {
		id := logID(&k.PublicKey)
		return map[string]*root.TransparencyLog{hex.EncodeToString(id): {
			BaseURL: "https://rekor.localhost", ID: id, HashFunc: crypto.SHA256, SignatureHashFunc: crypto.SHA256,
			PublicKey: &k.PublicKey, ValidityPeriodStart: now.Add(-time.Hour), ValidityPeriodEnd: now.Add(time.Hour),
		}}
	}
	var ctlogs map[string]*root.TransparencyLog
	if ct != nil {
		ctlogs = tlog(ct.ctKey)
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: v.root, Intermediates: []*x509.Certificate{v.inter}, ValidityPeriodStart: now.Add(-5 * time.Hour), ValidityPeriodEnd: now.Add(time.Hour)}},
		ctlogs,
		[]root.TimestampingAuthority{&root.SigstoreTimestampingAuthority{Root: v.root, Intermediates: []*x509.Certificate{v.tsaInter}, Leaf: v.tsaLeaf, ValidityPeriodStart: now.Add(-5 * time.Hour), ValidityPeriodEnd: now.Add(time.Hour)}},
		tlog(logs.rekorKey))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
