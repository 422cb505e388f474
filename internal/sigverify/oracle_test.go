package sigverify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/catalogsync/catalogsync/internal/sigverify"
)

// The oracle: sigstore-go, configured as the keyless requirement was
// before this package replaced it.

const (
	mediaV01 = "application/vnd.dev.sigstore.bundle+json;version=0.1"
	mediaV03 = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// oracle is sigstore-go's verdict on raw for the artifact digest.
func oracle(rootJSON, raw, digest []byte, ignoreTlog bool, identity, issuer string) error {
	tr, err := root.NewTrustedRootFromJSON(rootJSON)
	if err != nil {
		return err
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if !ignoreTlog {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return err
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return err
	}
	id, err := verify.NewShortCertificateIdentity(issuer, "", identity, "")
	if err != nil {
		return err
	}
	_, err = v.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithCertificateIdentity(id)))
	return err
}

// ours is this package's verdict, with the identity matched exactly.
func ours(rootJSON, raw, digest []byte, ignoreTlog bool, identity, issuer string) error {
	tr, err := sigverify.ParseTrustedRoot(rootJSON)
	if err != nil {
		return err
	}
	b, err := sigverify.Parse(raw)
	if err != nil {
		return err
	}
	k := sigverify.Keyless{Root: tr, IgnoreTlog: ignoreTlog}
	id, err := k.Verify(b, digest)
	if err != nil {
		return err
	}
	if id.SAN != identity || id.Issuer != issuer {
		return errors.New("another identity")
	}
	return nil
}

// signing is what a bundle is made of.
type signing struct {
	v         *virtual
	identity  string
	issuer    string
	legacy    bool // the issuer in the legacy extension
	artifact  []byte
	dsse      bool
	statement []byte           // the DSSE payload; a statement of the artifact when nil
	at        time.Time        // the integrated time; in the certificate's validity when zero
	certFrom  time.Time        // the certificate's start; now when zero
	sct       bool             // an SCT of the CT log embedded in the certificate
	extra     []pkix.Extension // more certificate extensions, after the issuer's
}

// make signs and returns the bundle: a v0.1 bundle (inclusion promise)
// for a message signature, v0.3 (promise and inclusion proof) for DSSE;
// with a timestamp of the signature.
func (s signing) make(t testing.TB) *protobundle.Bundle {
	t.Helper()
	at := s.at
	if at.IsZero() {
		at = time.Now().Add(5 * time.Minute)
	}
	from := s.certFrom
	if from.IsZero() {
		from = time.Now()
	}
	if s.at.IsZero() {
		at = from.Add(5 * time.Minute)
	}
	leaf, key := s.v.leaf(t, s.identity, s.issuer, s.legacy, from, s.sct, s.extra...)
	b := &protobundle.Bundle{MediaType: mediaV01, VerificationMaterial: &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: leaf.Raw}},
	}}
	var sig, body []byte
	if s.dsse {
		payload := s.statement
		if payload == nil {
			payload = statementOf(s.artifact)
		}
		const pt = "application/vnd.in-toto+json"
		sig = ecSign(t, key, fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(pt), pt, len(payload), payload))
		env := &protodsse.Envelope{Payload: payload, PayloadType: pt, Signatures: []*protodsse.Signature{{Sig: sig}}}
		raw, _ := protojson.Marshal(env)
		b.MediaType, b.Content = mediaV03, &protobundle.Bundle_DsseEnvelope{DsseEnvelope: env}
		body = dsseEntry(raw, payload, sig, leaf)
	} else {
		sum := sha256.Sum256(s.artifact)
		sig = ecSignDigest(t, key, sum[:])
		b.Content = &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}}
		body = hashedrekord(sum[:], sig, leaf)
	}
	kind := map[bool]string{false: "hashedrekord", true: "dsse"}[s.dsse]
	b.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{s.v.entry(t, kind, body, at.Unix(), s.dsse)}
	b.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: s.v.timestamp(t, sig)}},
	}
	return b
}

func ecSign(t testing.TB, key *ecdsa.PrivateKey, msg []byte) []byte {
	sum := sha256.Sum256(msg)
	return ecSignDigest(t, key, sum[:])
}

func ecSignDigest(t testing.TB, key *ecdsa.PrivateKey, digest []byte) []byte {
	t.Helper()
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func statementOf(artifact []byte) []byte {
	sum := sha256.Sum256(artifact)
	return []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"catalog","digest":{"sha256":"` + hex.EncodeToString(sum[:]) + `"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`)
}

func marshal(t testing.TB, b *protobundle.Bundle) []byte {
	t.Helper()
	raw, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// keyOracle is sigstore-go's verdict on a bundle signed with pub, any
// hint and time, as the key requirement had it.
func keyOracle(t testing.TB, raw, digest []byte, pub crypto.PublicKey) error {
	t.Helper()
	sv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(sv, time.Time{}, time.Time{}), nil
	})
	v, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return err
	}
	_, err = v.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithKey()))
	return err
}
