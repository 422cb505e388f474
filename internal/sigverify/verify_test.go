package sigverify_test

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"google.golang.org/protobuf/proto"

	"github.com/catalogsync/catalogsync/internal/certtest"
	"github.com/catalogsync/catalogsync/internal/sigverify"
)

const (
	identity = "release@acme.example"
	issuer   = "https://issuer.acme.example"
)

// mutated is a copy of b changed by f.
func mutated(b *protobundle.Bundle, f func(*protobundle.Bundle)) *protobundle.Bundle {
	c := proto.Clone(b).(*protobundle.Bundle)
	f(c)
	return c
}

type diffCase struct {
	name       string
	bundle     *protobundle.Bundle
	root       []byte
	ignoreTlog bool
	artifact   []byte // the signed artifact when nil
	identity   string // identity when ""
	issuer     string // issuer when ""
	accept     bool
}

// TestKeylessVerdictsMatchSigstoreGo: for valid bundles (message
// signatures and DSSE, by the log's time or a timestamp authority's) and
// for mutations of them, Keyless.Verify accepts exactly what sigstore-go
// accepts, with the options the keyless requirement uses.
func TestKeylessVerdictsMatchSigstoreGo(t *testing.T) {
	vs, other := newVirtual(t), newVirtual(t)
	artifact := []byte("catalog manifest")
	msg := signing{v: vs, identity: identity, issuer: issuer, artifact: artifact}
	env := msg
	env.dsse = true
	m, d := msg.make(t), env.make(t)
	trusted := vs.trustedRoot(t, vs, nil)
	var cases []diffCase
	for _, base := range []struct {
		kind string
		b    *protobundle.Bundle
		s    signing
	}{{"message", m, msg}, {"dsse", d, env}} {
		cases = append(cases, commonCases(t, base.kind, base.b, base.s, trusted, vs, other)...)
	}
	cases = append(cases, dsseCases(t, d, env, trusted, vs)...)
	cases = append(cases, messageCases(t, m, msg, trusted, vs)...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := marshal(t, tc.bundle)
			art, id, iss := tc.artifact, tc.identity, tc.issuer
			if art == nil {
				art = artifact
			}
			if id == "" {
				id = identity
			}
			if iss == "" {
				iss = issuer
			}
			sum := sha256.Sum256(art)
			theirs := oracle(tc.root, raw, sum[:], tc.ignoreTlog, id, iss)
			mine := ours(tc.root, raw, sum[:], tc.ignoreTlog, id, iss)
			t.Logf("sigstore-go: %v; ours: %v", theirs, mine)
			if (theirs == nil) != (mine == nil) {
				t.Fatalf("verdicts differ: sigstore-go %v, ours %v", theirs, mine)
			}
			if (mine == nil) != tc.accept {
				t.Fatalf("both say %v, the case expects accept=%v", mine, tc.accept)
			}
		})
	}
}

// commonCases apply to both kinds of content.
func commonCases(t *testing.T, kind string, b *protobundle.Bundle, s signing, trusted []byte, vs, other *virtual) []diffCase {
	late, early := s, s
	late.at, early.at = time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	rogue, future, logged := s, s, s
	rogue.v, future.certFrom, logged.sct = other, time.Now().Add(30*time.Minute), true
	withSCT := logged.make(t)
	anotherCert := s
	noTimestamps := func(b *protobundle.Bundle) { b.VerificationMaterial.TimestampVerificationData = nil }
	entry := func(f func(b *protobundle.Bundle)) *protobundle.Bundle { return mutated(b, f) }
	return []diffCase{
		{name: kind + "/valid", bundle: b, root: trusted, accept: true},
		{name: kind + "/valid by timestamp authority", bundle: b, root: trusted, ignoreTlog: true, accept: true},
		{name: kind + "/log time only", bundle: mutated(b, noTimestamps), root: trusted, accept: true},
		{name: kind + "/no trusted time", bundle: mutated(b, noTimestamps), root: trusted, ignoreTlog: true},
		{name: kind + "/flipped signature byte", bundle: mutated(b, flipSignature), root: trusted},
		{name: kind + "/flipped signature byte, timestamp only", bundle: mutated(b, flipSignature), root: trusted, ignoreTlog: true},
		{name: kind + "/other digest", bundle: b, root: trusted, artifact: []byte("another manifest")},
		{name: kind + "/other certificate", bundle: mutated(b, func(c *protobundle.Bundle) {
			c.VerificationMaterial.Content = anotherCert.make(t).VerificationMaterial.Content
		}), root: trusted, ignoreTlog: true},
		{name: kind + "/logged after the certificate expired", bundle: late.make(t), root: trusted},
		{name: kind + "/logged before the certificate", bundle: early.make(t), root: trusted},
		{name: kind + "/timestamped before the certificate", bundle: future.make(t), root: trusted, ignoreTlog: true},
		{name: kind + "/timestamped before the certificate, logged in it", bundle: future.make(t), root: trusted},
		{name: kind + "/unknown log", bundle: b, root: vs.trustedRoot(t, other, nil)},
		{name: kind + "/unknown log, timestamp authority", bundle: b, root: vs.trustedRoot(t, other, nil), ignoreTlog: true, accept: true},
		{name: kind + "/tampered body", bundle: entry(func(c *protobundle.Bundle) {
			body := c.VerificationMaterial.TlogEntries[0].CanonicalizedBody
			body[len(body)/2] ^= 1
		}), root: trusted},
		{name: kind + "/tampered log index", bundle: entry(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].LogIndex++ }), root: trusted},
		{name: kind + "/tampered integrated time", bundle: entry(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].IntegratedTime-- }), root: trusted},
		{name: kind + "/tampered promise", bundle: entry(func(c *protobundle.Bundle) {
			c.VerificationMaterial.TlogEntries[0].InclusionPromise.SignedEntryTimestamp[8] ^= 1
		}), root: trusted},
		// Nothing signs kindVersion: the body says what the entry is.
		{name: kind + "/kindVersion unlike the body", bundle: entry(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].KindVersion.Kind = "intoto" }), root: trusted, accept: true},
		{name: kind + "/duplicate entry", bundle: entry(func(c *protobundle.Bundle) {
			c.VerificationMaterial.TlogEntries = append(c.VerificationMaterial.TlogEntries, c.VerificationMaterial.TlogEntries[0])
		}), root: trusted},
		{name: kind + "/another signing's entry", bundle: entry(func(c *protobundle.Bundle) {
			c.VerificationMaterial.TlogEntries = s.make(t).VerificationMaterial.TlogEntries
		}), root: trusted},
		{name: kind + "/tampered timestamp", bundle: entry(func(c *protobundle.Bundle) {
			ts := c.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps[0].SignedTimestamp
			ts[len(ts)-10] ^= 1
		}), root: trusted, ignoreTlog: true},
		{name: kind + "/rogue CA and log", bundle: rogue.make(t), root: trusted},
		{name: kind + "/rogue CA, timestamp only", bundle: rogue.make(t), root: trusted, ignoreTlog: true},
		{name: kind + "/trusting the rogue only", bundle: b, root: other.trustedRoot(t, other, nil)},
		{name: kind + "/wrong identity", bundle: b, root: trusted, identity: "intruder@acme.example"},
		{name: kind + "/wrong issuer", bundle: b, root: trusted, issuer: "https://elsewhere.example"},
		{name: kind + "/SCT required", bundle: b, root: vs.trustedRoot(t, vs, vs)},
		{name: kind + "/SCT of the CT log", bundle: withSCT, root: vs.trustedRoot(t, vs, vs), accept: true},
		{name: kind + "/SCT of an unknown CT log", bundle: withSCT, root: vs.trustedRoot(t, vs, other)},
		{name: kind + "/unknown media type", bundle: entry(func(c *protobundle.Bundle) { c.MediaType = "application/vnd.dev.sigstore.bundle.v0.4+json" }), root: trusted},
		{name: kind + "/key instead of certificate", bundle: entry(func(c *protobundle.Bundle) {
			c.VerificationMaterial.Content = &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "k"}}
		}), root: trusted, ignoreTlog: true},
	}
}

func flipSignature(b *protobundle.Bundle) {
	if m := b.GetMessageSignature(); m != nil {
		m.Signature[len(m.Signature)-3] ^= 1
		return
	}
	s := b.GetDsseEnvelope().Signatures[0].Sig
	s[len(s)-3] ^= 1
}

// dsseCases: the DSSE envelope and the v0.3 bundle's inclusion proof.
func dsseCases(t *testing.T, b *protobundle.Bundle, s signing, trusted []byte, vs *virtual) []diffCase {
	otherSubject := s
	otherSubject.statement = statementOf([]byte("another manifest"))
	proof := func(f func(*protobundle.Bundle)) *protobundle.Bundle { return mutated(b, f) }
	return []diffCase{
		{name: "dsse/payload type swap", bundle: proof(func(c *protobundle.Bundle) { c.GetDsseEnvelope().PayloadType = "application/json" }), root: trusted, ignoreTlog: true},
		{name: "dsse/payload swap", bundle: proof(func(c *protobundle.Bundle) {
			c.GetDsseEnvelope().Payload = statementOf([]byte("another manifest"))
		}), root: trusted, ignoreTlog: true},
		{name: "dsse/subject of another artifact", bundle: otherSubject.make(t), root: trusted},
		{name: "dsse/two signatures", bundle: proof(func(c *protobundle.Bundle) {
			env := c.GetDsseEnvelope()
			env.Signatures = append(env.Signatures, &protodsse.Signature{Sig: env.Signatures[0].Sig})
		}), root: trusted},
		{name: "dsse/tampered proof root", bundle: proof(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].InclusionProof.RootHash[0] ^= 1 }), root: trusted},
		{name: "dsse/extra proof hash", bundle: proof(func(c *protobundle.Bundle) {
			p := c.VerificationMaterial.TlogEntries[0].InclusionProof
			p.Hashes = append(p.Hashes, p.RootHash)
		}), root: trusted},
		{name: "dsse/tampered checkpoint", bundle: proof(func(c *protobundle.Bundle) {
			cp := c.VerificationMaterial.TlogEntries[0].InclusionProof.Checkpoint
			cp.Envelope = cp.Envelope[:len(cp.Envelope)-8] + "AAAAAAA\n"
		}), root: trusted},
		{name: "dsse/tampered checkpoint origin", bundle: proof(func(c *protobundle.Bundle) {
			cp := c.VerificationMaterial.TlogEntries[0].InclusionProof.Checkpoint
			cp.Envelope = "x" + cp.Envelope
		}), root: trusted},
		{name: "dsse/signed checkpoint of another root", bundle: proof(func(c *protobundle.Bundle) {
			c.VerificationMaterial.TlogEntries[0].InclusionProof.Checkpoint.Envelope = vs.checkpoint(t, 2, make([]byte, 32))
		}), root: trusted},
		{name: "dsse/checkpoint signed by another key", bundle: proof(func(c *protobundle.Bundle) {
			p := c.VerificationMaterial.TlogEntries[0].InclusionProof
			p.Checkpoint.Envelope = newVirtual(t).checkpoint(t, 2, p.RootHash)
		}), root: trusted},
		{name: "dsse/proof without promise, timestamp authority", bundle: proof(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].InclusionPromise = nil }), root: trusted, accept: true},
		{name: "dsse/proof without promise, no timestamp", bundle: proof(func(c *protobundle.Bundle) {
			c.VerificationMaterial.TlogEntries[0].InclusionPromise = nil
			c.VerificationMaterial.TimestampVerificationData = nil
		}), root: trusted},
		{name: "dsse/v0.3 without proof", bundle: proof(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].InclusionProof = nil }), root: trusted},
		{name: "dsse/v0.3 with a chain", bundle: proof(func(c *protobundle.Bundle) { c.VerificationMaterial.Content = chainOf(c, nil) }), root: trusted},
	}
}

// messageCases: the message signature and the v0.1 bundle.
func messageCases(t *testing.T, b *protobundle.Bundle, s signing, trusted []byte, vs *virtual) []diffCase {
	inter := vs.inter
	msg := func(f func(*protobundle.Bundle)) *protobundle.Bundle { return mutated(b, f) }
	legacy, uri, disagree := s, s, s
	legacy.legacy, uri.identity = true, "https://ci.acme.example/release"
	disagree.extra = []pkix.Extension{{Id: oidIssuerV1, Value: []byte("https://elsewhere.example")}}
	return []diffCase{
		{name: "message/other message digest", bundle: msg(func(c *protobundle.Bundle) { c.GetMessageSignature().MessageDigest.Digest[0] ^= 1 }), root: trusted, ignoreTlog: true},
		{name: "message/v0.1 with a chain", bundle: msg(func(c *protobundle.Bundle) { c.VerificationMaterial.Content = chainOf(c, inter.Raw) }), root: trusted, accept: true},
		{name: "message/v0.1 without promise", bundle: msg(func(c *protobundle.Bundle) { c.VerificationMaterial.TlogEntries[0].InclusionPromise = nil }), root: trusted},
		{name: "message/legacy issuer extension", bundle: legacy.make(t), root: trusted, accept: true},
		{name: "message/URI identity", bundle: uri.make(t), root: trusted, identity: "https://ci.acme.example/release", accept: true},
		// sigstore-go reads the later issuer extension.
		{name: "message/legacy issuer extension unlike the current one", bundle: disagree.make(t), root: trusted},
	}
}

// chainOf is c's certificate as a chain, with intermediate when given.
func chainOf(c *protobundle.Bundle, intermediate []byte) *protobundle.VerificationMaterial_X509CertificateChain {
	certs := []*protocommon.X509Certificate{{RawBytes: c.VerificationMaterial.GetCertificate().RawBytes}}
	if intermediate != nil {
		certs = append(certs, &protocommon.X509Certificate{RawBytes: intermediate})
	}
	return &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{Certificates: certs}}
}

// TestKeyVerdictsMatchSigstoreGo: bundles signed with a key (a message
// signature, a DSSE envelope) verify with VerifyWithKey exactly when
// sigstore-go verifies them with that key as its trust material.
func TestKeyVerdictsMatchSigstoreGo(t *testing.T) {
	key, other := certtest.Key(t), certtest.Key(t)
	artifact := []byte("catalog manifest")
	sum := sha256.Sum256(artifact)
	msg := &protobundle.Bundle{MediaType: mediaV03, VerificationMaterial: &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "release"}},
	}, Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
		MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
		Signature:     ecSignDigest(t, key, sum[:]),
	}}}
	payload := statementOf(artifact)
	env := mutated(msg, func(c *protobundle.Bundle) {
		sig := ecSign(t, key, fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(sigverify.IntotoType), sigverify.IntotoType, len(payload), payload))
		c.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: payload, PayloadType: sigverify.IntotoType, Signatures: []*protodsse.Signature{{Sig: sig}}}}
	})
	vs := newVirtual(t)
	keyless := signing{v: vs, identity: identity, issuer: issuer, artifact: artifact}.make(t)
	for _, tc := range []struct {
		name     string
		bundle   *protobundle.Bundle
		key      *ecdsa.PrivateKey
		artifact []byte
		accept   bool
	}{
		{"message", msg, key, artifact, true},
		{"dsse", env, key, artifact, true},
		{"message, other key", msg, other, artifact, false},
		{"dsse, other key", env, other, artifact, false},
		{"message, other digest", msg, key, []byte("another manifest"), false},
		{"dsse, other digest", env, key, []byte("another manifest"), false},
		{"message, flipped signature byte", mutated(msg, flipSignature), key, artifact, false},
		{"dsse, flipped signature byte", mutated(env, flipSignature), key, artifact, false},
		{"certificate bundle", keyless, key, artifact, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := marshal(t, tc.bundle)
			d := sha256.Sum256(tc.artifact)
			theirs := keyOracle(t, raw, d[:], &tc.key.PublicKey)
			var mine error
			b, err := sigverify.Parse(raw)
			if mine = err; err == nil {
				mine = sigverify.VerifyWithKey(b, d[:], &tc.key.PublicKey)
			}
			t.Logf("sigstore-go: %v; ours: %v", theirs, mine)
			if (theirs == nil) != (mine == nil) || (mine == nil) != tc.accept {
				t.Fatalf("sigstore-go %v, ours %v, the case expects accept=%v", theirs, mine, tc.accept)
			}
		})
	}
}
