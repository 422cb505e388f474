// Package sct verifies the Signed Certificate Timestamps a certificate
// authority embeds in a certificate (RFC 6962 §3.3) with the standard
// library: a keyless signature is trusted only if a certificate
// transparency log promised to publish its certificate.
package sct

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
)

var (
	// ErrNoSCT is returned when the certificate has no SCT list extension.
	ErrNoSCT = errors.New("certificate has no embedded SCT")
	// ErrUnknownLog is returned when every embedded SCT names a log
	// outside the trusted ones.
	ErrUnknownLog = errors.New("no embedded SCT from a trusted log")
	// ErrInvalid is returned for a malformed certificate or SCT list, or
	// when no SCT of a trusted log verifies.
	ErrInvalid = errors.New("invalid embedded SCT")
)

// Bounds on what a hostile certificate may make Verify do.
const (
	maxSCTs = 16       // SCTs in a list; real certificates carry 1 to 5
	maxTBS  = 64 << 10 // bytes of TBSCertificate; real ones are 1 to 2 KiB
)

// Verify checks that leaf carries at least one embedded SCT (extension
// 1.3.6.1.4.1.11129.2.4.2) signed by one of logs over the precertificate
// entry made from leaf and issuer. Logs are keyed by log ID, the SHA-256
// of the log key's PKIX DER; their keys are *ecdsa.PublicKey (P-256,
// P-384), *rsa.PublicKey (2048 bits or more) or ed25519.PublicKey.
// SCTs of other logs are skipped; a malformed SCT list fails as a whole.
func Verify(leaf, issuer *x509.Certificate, logs map[[32]byte]crypto.PublicKey) error {
	if leaf == nil || issuer == nil {
		return fmt.Errorf("%w: leaf and issuer certificates are required", ErrInvalid)
	}
	tbs, ext, err := precertTBS(leaf.RawTBSCertificate)
	if err != nil {
		return err
	}
	scts, err := parseList(ext)
	if err != nil {
		return err
	}
	issuerKeyHash := sha256.Sum256(issuer.RawSubjectPublicKeyInfo)
	var first error
	var buf []byte
	for i := range scts {
		key, ok := logs[scts[i].logID]
		if !ok {
			continue
		}
		buf, err = scts[i].verify(key, buf, &issuerKeyHash, tbs)
		if err == nil {
			return nil
		}
		if first == nil {
			first = fmt.Errorf("%w: SCT %d of log %x: %v", ErrInvalid, i, scts[i].logID, err)
		}
	}
	if first != nil {
		return first
	}
	return fmt.Errorf("%w: %d SCTs, none of the %d trusted logs", ErrUnknownLog, len(scts), len(logs))
}
