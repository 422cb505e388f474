package sct

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
)

// TLS 1.2 HashAlgorithm and SignatureAlgorithm values (RFC 5246 §7.4.1.4.1,
// RFC 8422 §5.1.3).
const (
	hashSHA256    = 4
	hashIntrinsic = 8
	sigRSA        = 1
	sigECDSA      = 3
	sigEd25519    = 7
)

// signedData appends to buf[:0] what the log signed for s: the
// digitally-signed struct of RFC 6962 §3.2 for a precertificate entry.
func (s *sct) signedData(buf []byte, issuerKeyHash *[32]byte, tbs []byte) ([]byte, error) {
	b := cryptobyte.NewBuilder(buf[:0])
	b.AddUint8(0) // sct_version v1
	b.AddUint8(0) // signature_type certificate_timestamp
	b.AddUint64(s.timestamp)
	b.AddUint16(1) // entry_type precert_entry
	b.AddBytes(issuerKeyHash[:])
	b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(tbs) })
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(s.extensions) })
	return b.Bytes()
}

// verify checks s's signature by key over the precertificate entry; it
// returns buf, grown, for the next SCT.
func (s *sct) verify(key crypto.PublicKey, buf []byte, issuerKeyHash *[32]byte, tbs []byte) ([]byte, error) {
	if s.version != 0 {
		return buf, fmt.Errorf("version %d, not v1", s.version)
	}
	msg, err := s.signedData(buf, issuerKeyHash, tbs)
	if err != nil {
		return buf, err
	}
	return msg, checkSignature(key, s.hash, s.sigAlg, msg, s.signature)
}

var errSignature = errors.New("signature does not verify")

// checkSignature verifies sig over msg by key with the TLS algorithms
// hash and alg, which must be the ones RFC 6962 allows for key's type.
func checkSignature(key crypto.PublicKey, hash, alg uint8, msg, sig []byte) error {
	want, err := algorithmFor(key)
	if err != nil {
		return err
	}
	if [2]uint8{hash, alg} != want {
		return fmt.Errorf("algorithm %d/%d, not %d/%d for the log key", hash, alg, want[0], want[1])
	}
	d := sha256.Sum256(msg)
	ok := false
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, d[:], sig)
	case *rsa.PublicKey:
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, msg, sig)
	}
	if !ok {
		return errSignature
	}
	return nil
}

// algorithmFor returns the TLS hash and signature algorithms a log with
// key signs with: SHA-256 with ECDSA or RSA PKCS#1 v1.5, or Ed25519.
func algorithmFor(key crypto.PublicKey) ([2]uint8, error) {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		// A key built by hand may lack its point, and Bytes would panic
		// on it: the coordinates are read only to refuse that.
		if k != nil && k.X != nil && k.Y != nil && (k.Curve == elliptic.P256() || k.Curve == elliptic.P384()) { //nolint:staticcheck // SA1019: see above
			return [2]uint8{hashSHA256, sigECDSA}, nil
		}
	case *rsa.PublicKey:
		if k != nil && k.N != nil && k.N.BitLen() >= 2048 {
			return [2]uint8{hashSHA256, sigRSA}, nil
		}
	case ed25519.PublicKey:
		if len(k) == ed25519.PublicKeySize {
			return [2]uint8{hashIntrinsic, sigEd25519}, nil
		}
	}
	return [2]uint8{}, fmt.Errorf("log key %T is not ECDSA P-256 or P-384, RSA of 2048 bits or more, or Ed25519", key)
}
