package sigpolicy_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/ref"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore-go/pkg/root"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/catalogsync/catalogsync/internal/certtest"
)

// testCA is a certificate authority made in-test: as Fulcio it issues
// short-lived signing certificates, as a timestamp authority it signs
// RFC 3161 timestamps with its leaf.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	tsaCert *x509.Certificate
	tsaKey  *ecdsa.PrivateKey
}

var serial int64

func newSerial() *big.Int { serial++; return big.NewInt(serial) }

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca := &testCA{}
	ca.key = certtest.Key(t)
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, IsCA: true, BasicConstraintsValid: true,
	}
	ca.cert = certtest.Issue(t, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	// The timestamp authority's leaf: the timestamping EKU, critical.
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	if err != nil {
		t.Fatal(err)
	}
	ca.tsaKey = certtest.Key(t)
	ca.tsaCert = certtest.Issue(t, &x509.Certificate{
		SerialNumber: newSerial(), Subject: pkix.Name{CommonName: name + " TSA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}},
	}, ca.cert, &ca.tsaKey.PublicKey, ca.key)
	return ca
}

// trustedRoot writes the trusted_root.json of ca (its CA as Fulcio, its
// timestamp authority; no transparency log).
func (ca *testCA) trustedRoot(t *testing.T) string {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca.cert, ValidityPeriodStart: time.Now().Add(-time.Hour)}},
		nil,
		[]root.TimestampingAuthority{&root.SigstoreTimestampingAuthority{Root: ca.cert, Leaf: ca.tsaCert, ValidityPeriodStart: time.Now().Add(-time.Hour)}},
		nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fulcioCert issues, as Fulcio does, a short-lived certificate for pub
// with the identity as SAN (an email, or a URI for a workload) and the
// OIDC issuer in the Fulcio extension.
func (ca *testCA) fulcioCert(t *testing.T, pub crypto.PublicKey, identity, issuer string) []byte {
	t.Helper()
	iss, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}, Value: iss}},
	}
	if u, err := url.Parse(identity); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{identity}
	}
	return certtest.Issue(t, tmpl, ca.cert, pub, ca.key).Raw
}

// timestamp adds an RFC 3161 timestamp of the bundle's signature by the
// CA's timestamp authority: the trusted time of a bundle without a log
// entry.
func (ca *testCA) timestamp(t *testing.T, b *protobundle.Bundle) {
	t.Helper()
	sig := b.GetMessageSignature().GetSignature()
	if env := b.GetDsseEnvelope(); env != nil {
		sig = env.GetSignatures()[0].GetSig()
	}
	req, err := timestamp.CreateRequest(bytes.NewReader(sig), &timestamp.RequestOptions{Hash: crypto.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := timestamp.ParseRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	ts := timestamp.Timestamp{HashAlgorithm: parsed.HashAlgorithm, HashedMessage: parsed.HashedMessage, Time: time.Now(), Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}}
	resp, err := ts.CreateResponseWithOpts(ca.tsaCert, ca.tsaKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	b.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: resp}},
	}
}

// statement is what cosign signs for an image as a bundle: an in-toto
// statement whose subject is the image's digest.
func statement(repo, imageDigest string) []byte {
	return fmt.Appendf(nil, `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":%q,"digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`,
		repo, strings.TrimPrefix(imageDigest, "sha256:"))
}

const bundleType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// keylessBundle signs, keyless, the statement for signedDigest with a
// certificate from ca for identity and issuer, timestamped by tsa: a DSSE
// envelope as cosign makes for an image.
func keylessBundle(t *testing.T, ca, tsa *testCA, identity, issuer, repo, signedDigest string) []byte {
	t.Helper()
	key := certtest.Key(t)
	const payloadType = "application/vnd.in-toto+json"
	payload := statement(repo, signedDigest)
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
	b := &protobundle.Bundle{
		MediaType: bundleType,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_Certificate{
			Certificate: &protocommon.X509Certificate{RawBytes: ca.fulcioCert(t, &key.PublicKey, identity, issuer)},
		}},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: payloadType, Signatures: []*protodsse.Signature{{Sig: ecSign(t, key, pae)}},
		}},
	}
	tsa.timestamp(t, b)
	return marshal(t, b)
}

// keyBundle signs the image manifest (its digest is the message digest)
// with key, as a key-based bundle.
func keyBundle(t *testing.T, key *ecdsa.PrivateKey, manifestBytes []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(manifestBytes)
	b := &protobundle.Bundle{
		MediaType: bundleType,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_PublicKey{
			PublicKey: &protocommon.PublicKeyIdentifier{Hint: "test"},
		}},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     ecSign(t, key, manifestBytes),
		}},
	}
	return marshal(t, b)
}

// ecSign makes an ECDSA P-256 SHA-256 signature of msg.
func ecSign(t *testing.T, key *ecdsa.PrivateKey, msg []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(msg)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func marshal(t *testing.T, b *protobundle.Bundle) []byte {
	t.Helper()
	out, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// attach pushes bundle as an OCI referrer of the image at imageDigest,
// as cosign does: an artifact manifest with the bundle as its one layer
// and the image as its subject.
func attach(t *testing.T, rc *regclient.RegClient, repo, imageDigest string, bundle []byte) {
	t.Helper()
	ctx := context.Background()
	r, err := ref.New(repo)
	if err != nil {
		t.Fatal(err)
	}
	img, err := rc.ManifestHead(ctx, r.SetDigest(imageDigest))
	if err != nil {
		t.Fatal(err)
	}
	put := func(mt string, b []byte) descriptor.Descriptor {
		d := descriptor.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if _, err := rc.BlobPut(ctx, r, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cfg := put("application/vnd.oci.empty.v1+json", []byte("{}"))
	layer := put(bundleType, bundle)
	subject := img.GetDescriptor()
	m, err := manifest.New(manifest.WithOrig(v1.Manifest{
		Versioned: v1.ManifestSchemaVersion, MediaType: "application/vnd.oci.image.manifest.v1+json",
		ArtifactType: bundleType, Config: cfg, Layers: []descriptor.Descriptor{layer},
		Subject: &descriptor.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.ManifestPut(ctx, r.SetDigest(m.GetDescriptor().Digest.String()), m); err != nil {
		t.Fatal(err)
	}
}
