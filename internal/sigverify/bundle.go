// Package sigverify verifies sigstore bundles (v0.1 to v0.3) with the
// standard library: a signature by a trusted key, or by a short-lived
// certificate of a trusted root's certificate authority observed at a
// trusted time (a Rekor v1 log entry or an RFC 3161 timestamp). It reads
// only what catalog signatures need, so the binary links no sigstore
// client libraries.
package sigverify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Bounds on what one bundle may hold.
const (
	MaxBundleSize = 128 << 10
	MaxChain      = 4
	MaxTlog       = 8
	MaxTimestamps = 8
)

// ErrMalformed is a bundle that cannot be read or exceeds the bounds.
var ErrMalformed = errors.New("malformed bundle")

// Bundle is a sigstore bundle as its JSON spells it.
type Bundle struct {
	MediaType            string            `json:"mediaType"`
	VerificationMaterial Material          `json:"verificationMaterial"`
	MessageSignature     *MessageSignature `json:"messageSignature"`
	DsseEnvelope         *Envelope         `json:"dsseEnvelope"`
	minor                int
}

// Material is what a bundle's signature is verified with.
type Material struct {
	PublicKey            *struct{ Hint string } `json:"publicKey"`
	Certificate          *RawCert               `json:"certificate"`
	X509CertificateChain *struct {
		Certificates []RawCert `json:"certificates"`
	} `json:"x509CertificateChain"`
	TlogEntries               []TlogEntry `json:"tlogEntries"`
	TimestampVerificationData *struct {
		Rfc3161Timestamps []struct {
			SignedTimestamp []byte `json:"signedTimestamp"`
		} `json:"rfc3161Timestamps"`
	} `json:"timestampVerificationData"`
}

// RawCert is a DER certificate.
type RawCert struct {
	RawBytes []byte `json:"rawBytes"`
}

// MessageSignature signs an artifact's digest.
type MessageSignature struct {
	MessageDigest *struct {
		Algorithm string `json:"algorithm"`
		Digest    []byte `json:"digest"`
	} `json:"messageDigest"`
	Signature []byte `json:"signature"`
}

// Envelope is a DSSE envelope.
type Envelope struct {
	Payload     []byte `json:"payload"`
	PayloadType string `json:"payloadType"`
	Signatures  []struct {
		Sig   []byte `json:"sig"`
		Keyid string `json:"keyid"`
	} `json:"signatures"`
}

// int64s are strings in protobuf's JSON; numbers are accepted too.
type pbInt64 int64

func (n *pbInt64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(bytes.Trim(b, `"`)), 10, 64)
	*n = pbInt64(v)
	return err
}

// mediaTypes are the bundle versions read, by minor version.
var mediaTypes = map[string]int{
	"application/vnd.dev.sigstore.bundle+json;version=0.1": 1,
	"application/vnd.dev.sigstore.bundle.v0.1+json":        1,
	"application/vnd.dev.sigstore.bundle+json;version=0.2": 2,
	"application/vnd.dev.sigstore.bundle.v0.2+json":        2,
	"application/vnd.dev.sigstore.bundle+json;version=0.3": 3,
	"application/vnd.dev.sigstore.bundle.v0.3+json":        3,
}

// Parse reads a bundle within the bounds and checks its shape as its
// version requires.
func Parse(raw []byte) (*Bundle, error) {
	if len(raw) > MaxBundleSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxBundleSize)
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the bundle", ErrMalformed)
	}
	var ok bool
	if b.minor, ok = mediaTypes[b.MediaType]; !ok {
		return nil, fmt.Errorf("%w: media type %q", ErrMalformed, b.MediaType)
	}
	if err := b.checkShape(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return &b, nil
}

func (b *Bundle) checkShape() error {
	m := &b.VerificationMaterial
	switch {
	case (b.MessageSignature == nil) == (b.DsseEnvelope == nil):
		return errors.New("needs a message signature or a DSSE envelope (one of them)")
	case count(m.PublicKey != nil, m.Certificate != nil, m.X509CertificateChain != nil) != 1:
		return errors.New("needs a public key, a certificate or a certificate chain (one of them)")
	case m.X509CertificateChain != nil && len(m.X509CertificateChain.Certificates) > MaxChain:
		return fmt.Errorf("certificate chain longer than %d", MaxChain)
	case m.X509CertificateChain != nil && b.minor >= 3:
		return errors.New("a v0.3 bundle holds a certificate, not a chain")
	case len(m.TlogEntries) > MaxTlog:
		return fmt.Errorf("more than %d log entries", MaxTlog)
	case len(b.Timestamps()) > MaxTimestamps:
		return fmt.Errorf("more than %d timestamps", MaxTimestamps)
	}
	for i, e := range m.TlogEntries {
		if err := e.checkShape(b.minor); err != nil {
			return fmt.Errorf("log entry %d: %w", i, err)
		}
	}
	return nil
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// Timestamps are the bundle's RFC 3161 signed timestamps.
func (b *Bundle) Timestamps() [][]byte {
	var out [][]byte
	if d := b.VerificationMaterial.TimestampVerificationData; d != nil {
		for _, t := range d.Rfc3161Timestamps {
			out = append(out, t.SignedTimestamp)
		}
	}
	return out
}

// Certs are the bundle's certificates, leaf first (none for a key).
func (b *Bundle) Certs() [][]byte {
	m := &b.VerificationMaterial
	switch {
	case m.Certificate != nil:
		return [][]byte{m.Certificate.RawBytes}
	case m.X509CertificateChain != nil:
		var out [][]byte
		for _, c := range m.X509CertificateChain.Certificates {
			out = append(out, c.RawBytes)
		}
		return out
	}
	return nil
}
