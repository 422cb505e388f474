package sigverify

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/catalogsync/catalogsync/internal/sct"
)

// Keyless is how certificate signatures are verified.
type Keyless struct {
	Root *TrustedRoot
	// IgnoreTlog accepts bundles without a log entry: their time must
	// then come from a timestamp authority.
	IgnoreTlog bool
}

// Verify verifies a bundle signed with a certificate for the sha256
// artifact digest: at least one trusted time (a log's integrated time or
// a timestamp authority's), a verified log entry unless IgnoreTlog, the
// certificate chained to a trusted authority at every trusted time, an
// SCT when the root has CT logs, and the signature. It returns the
// certificate's identity.
func (k *Keyless) Verify(b *Bundle, digest []byte) (Identity, error) {
	leaf, intermediates, err := b.certificates()
	if err != nil {
		return Identity{}, err
	}
	sig, err := b.Signature()
	if err != nil {
		return Identity{}, err
	}
	var times []time.Time
	if !k.IgnoreTlog {
		if times, err = k.Root.verifyTlog(b, leaf, sig); err != nil {
			return Identity{}, fmt.Errorf("transparency log: %w", err)
		}
	}
	var tsErr error
	for _, tsr := range b.Timestamps() {
		t, err := k.Root.verifyTimestamp(tsr, sig)
		if err != nil {
			tsErr = err
			continue
		}
		times = append(times, t)
	}
	if len(times) == 0 {
		return Identity{}, fmt.Errorf("no trusted time (a log's promise or a timestamp authority's): %v", tsErr)
	}
	var chain []*x509.Certificate
	for _, t := range times {
		if chain, err = k.Root.verifyCert(leaf, intermediates, t); err != nil {
			return Identity{}, err
		}
	}
	if err := k.verifySCT(leaf, chain); err != nil {
		return Identity{}, err
	}
	if err := b.verifyContent(leaf.PublicKey, digest, true); err != nil {
		return Identity{}, fmt.Errorf("signature: %w", err)
	}
	return identityOf(leaf)
}

// verifySCT requires, when the root has CT logs, an SCT embedded in leaf
// by one of them, dated within its validity.
func (k *Keyless) verifySCT(leaf *x509.Certificate, chain []*x509.Certificate) error {
	if !k.Root.HasCTLogs() {
		return nil
	}
	if len(chain) < 2 {
		return errors.New("certificate transparency: the certificate has no issuer")
	}
	if err := sct.VerifyLogs(leaf, chain[1], k.Root.ctlogs); err != nil {
		return fmt.Errorf("certificate transparency: %w", err)
	}
	return nil
}

// certificates parses the bundle's leaf and the intermediates it brings.
func (b *Bundle) certificates() (*x509.Certificate, []*x509.Certificate, error) {
	raw := b.Certs()
	if len(raw) == 0 {
		return nil, nil, errors.New("signed with a key, not a certificate")
	}
	var certs []*x509.Certificate
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate: %v", err)
		}
		certs = append(certs, c)
	}
	return certs[0], certs[1:], nil
}

// VerifyWithKey verifies a bundle signed with pub for the sha256 artifact
// digest. A key carries no validity period, so no time is needed.
func VerifyWithKey(b *Bundle, digest []byte, pub crypto.PublicKey) error {
	if b.VerificationMaterial.PublicKey == nil {
		return errors.New("signed with a certificate, not a key")
	}
	if err := b.verifyContent(pub, digest, false); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	return nil
}

// VerifyMessage verifies a signature of msg by pub (ECDSA and RSA with
// SHA-256, or ed25519), as a key signs cosign's simple-signing payload.
func VerifyMessage(pub crypto.PublicKey, msg, sig []byte) error {
	return verifyMessage(pub, msg, sig, false)
}

// ParsePublicKey reads a PEM public key (PKIX, or PKCS #1 for RSA).
func ParsePublicKey(b []byte) (crypto.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block")
	}
	if pub, err := x509.ParsePKIXPublicKey(blk.Bytes); err == nil {
		return pub, nil
	}
	return x509.ParsePKCS1PublicKey(blk.Bytes)
}
