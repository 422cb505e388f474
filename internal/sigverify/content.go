package sigverify

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// IntotoType is the payload type of an in-toto statement.
const IntotoType = "application/vnd.in-toto+json"

// Bounds on an in-toto statement's subjects, as sigstore's verifiers
// have them.
const (
	maxSubjects       = 1024
	maxSubjectDigests = 32
)

// Signature is the bytes of the bundle's one signature.
func (b *Bundle) Signature() ([]byte, error) {
	if b.MessageSignature != nil {
		return b.MessageSignature.Signature, nil
	}
	if len(b.DsseEnvelope.Signatures) != 1 {
		return nil, errors.New("a DSSE envelope needs exactly one signature")
	}
	return b.DsseEnvelope.Signatures[0].Sig, nil
}

// SignedDigests are the sha256 digests the bundle says it signs: the
// message digest, or the subjects of an in-toto statement. They name a
// failure; the signature's check binds them.
func (b *Bundle) SignedDigests() []string {
	if m := b.MessageSignature; m != nil {
		if m.MessageDigest == nil || m.MessageDigest.Algorithm != "SHA2_256" {
			return nil
		}
		return []string{"sha256:" + hex.EncodeToString(m.MessageDigest.Digest)}
	}
	st, err := b.statement()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range st.Subject {
		if h := s.Digest["sha256"]; h != "" {
			out = append(out, "sha256:"+h)
		}
	}
	return out
}

type statement struct {
	Subject []struct {
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
}

func (b *Bundle) statement() (*statement, error) {
	env := b.DsseEnvelope
	if env == nil {
		return nil, errors.New("no DSSE envelope")
	}
	if env.PayloadType != IntotoType {
		return nil, fmt.Errorf("DSSE payload type %q is not an in-toto statement", env.PayloadType)
	}
	var st statement
	if err := json.Unmarshal(env.Payload, &st); err != nil {
		return nil, fmt.Errorf("in-toto statement: %v", err)
	}
	// After the decode, which bounds the nesting the key walk recurses in.
	if err := checkKeys(env.Payload, statementKey); err != nil {
		return nil, err
	}
	return &st, nil
}

// verifyContent checks the signature is pub's and binds the sha256
// artifact digest. compat also accepts SHA-256 with P-384 and P-521 keys,
// as sigstore clients made such signatures.
func (b *Bundle) verifyContent(pub crypto.PublicKey, digest []byte, compat bool) error {
	if m := b.MessageSignature; m != nil {
		if m.MessageDigest == nil || !bytes.Equal(m.MessageDigest.Digest, digest) {
			return errors.New("the message digest is not the artifact's")
		}
		return verifyDigest(pub, digest, m.Signature)
	}
	sig, err := b.Signature()
	if err != nil {
		return err
	}
	env := b.DsseEnvelope
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(env.PayloadType), env.PayloadType, len(env.Payload))
	if err := verifyMessage(pub, append(pae, env.Payload...), sig, compat); err != nil {
		return err
	}
	return b.checkSubject(digest)
}

// checkSubject checks the in-toto statement names the digest.
func (b *Bundle) checkSubject(digest []byte) error {
	st, err := b.statement()
	if err != nil {
		return err
	}
	if len(st.Subject) > maxSubjects {
		return fmt.Errorf("more than %d subjects", maxSubjects)
	}
	found := false
	for _, s := range st.Subject {
		if len(s.Digest) > maxSubjectDigests {
			return fmt.Errorf("a subject with more than %d digests", maxSubjectDigests)
		}
		for alg, h := range s.Digest {
			d, err := hex.DecodeString(h)
			if err != nil {
				return fmt.Errorf("subject digest %s: %v", alg, err)
			}
			found = found || (alg == "sha256" && bytes.Equal(d, digest))
		}
	}
	if !found {
		return errors.New("no subject of the statement is the artifact's digest")
	}
	return nil
}

var errBadSignature = errors.New("signature does not verify")

// verifyDigest verifies a signature of a SHA-256 digest.
func verifyDigest(pub crypto.PublicKey, digest, sig []byte) error {
	ok := false
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, digest, sig)
	case *rsa.PublicKey:
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest, sig) == nil
	case ed25519.PublicKey:
		return errors.New("an ed25519 message signature cannot be verified from a digest")
	default:
		return fmt.Errorf("unsupported key type %T", pub)
	}
	if !ok {
		return errBadSignature
	}
	return nil
}

// verifyMessage verifies a signature of msg: ECDSA with its curve's hash
// (or SHA-256 when compat), RSA PKCS#1 v1.5 SHA-256, or ed25519.
func verifyMessage(pub crypto.PublicKey, msg, sig []byte, compat bool) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		hashes := []crypto.Hash{crypto.SHA256}
		if compat {
			hashes = append([]crypto.Hash{curveHash(k.Curve)}, hashes...)
		}
		for _, h := range hashes {
			hh := h.New()
			hh.Write(msg)
			if ecdsa.VerifyASN1(k, hh.Sum(nil), sig) {
				return nil
			}
		}
		return errBadSignature
	case ed25519.PublicKey:
		if !ed25519.Verify(k, msg, sig) {
			return errBadSignature
		}
		return nil
	}
	h := crypto.SHA256.New()
	h.Write(msg)
	return verifyDigest(pub, h.Sum(nil), sig)
}

func curveHash(c elliptic.Curve) crypto.Hash {
	switch c {
	case elliptic.P384():
		return crypto.SHA384
	case elliptic.P521():
		return crypto.SHA512
	}
	return crypto.SHA256
}
