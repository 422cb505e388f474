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
	"math"
	"time"
)

var (
	// ErrNoSCT is returned when the certificate has no SCT list extension.
	ErrNoSCT = errors.New("certificate has no embedded SCT")
	// ErrUnknownLog is returned when every embedded SCT names a log
	// outside the trusted ones, or is dated outside its log's time.
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

// Log is a trusted CT log: its key and the time its SCTs must be from,
// as a trusted root's validFor gives it; a zero Start or End is open.
type Log struct {
	Key        crypto.PublicKey
	Start, End time.Time
}

// Verify checks that leaf carries at least one embedded SCT (extension
// 1.3.6.1.4.1.11129.2.4.2) signed by one of logs over the precertificate
// entry made from leaf and issuer. Logs are keyed by log ID, the SHA-256
// of the log key's PKIX DER; their keys are *ecdsa.PublicKey (P-256,
// P-384), *rsa.PublicKey (2048 bits or more) or ed25519.PublicKey.
// SCTs of other logs are skipped; a malformed SCT list fails as a whole.
func Verify(leaf, issuer *x509.Certificate, logs map[[32]byte]crypto.PublicKey) error {
	return verify(leaf, issuer, len(logs), func(id [32]byte, _ uint64) crypto.PublicKey { return logs[id] })
}

// VerifyLogs is Verify with each log trusted for its time only: an SCT
// whose timestamp is outside it is skipped, as sigstore-go skips it.
func VerifyLogs(leaf, issuer *x509.Certificate, logs map[[32]byte]Log) error {
	return verify(leaf, issuer, len(logs), func(id [32]byte, ms uint64) crypto.PublicKey {
		l, ok := logs[id]
		t := time.UnixMilli(int64(min(ms, math.MaxInt64)))
		if !ok || (!l.Start.IsZero() && t.Before(l.Start)) || (!l.End.IsZero() && t.After(l.End)) {
			return nil
		}
		return l.Key
	})
}

// verify is Verify with the trusted logs given by key: the key of log
// id for an SCT of timestamp ms, nil if that log is not trusted then;
// n counts the logs, for the error.
func verify(leaf, issuer *x509.Certificate, n int, key func(id [32]byte, ms uint64) crypto.PublicKey) error {
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
		k := key(scts[i].logID, scts[i].timestamp)
		if k == nil {
			continue
		}
		buf, err = scts[i].verify(k, buf, &issuerKeyHash, tbs)
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
	return fmt.Errorf("%w: %d SCTs, none of the %d trusted logs at its time", ErrUnknownLog, len(scts), n)
}
