package sct

import (
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// sct is one SignedCertificateTimestamp (RFC 6962 §3.2); its byte
// slices point into the certificate.
type sct struct {
	version    uint8
	logID      [32]byte
	timestamp  uint64
	extensions []byte
	hash       uint8 // TLS HashAlgorithm
	sigAlg     uint8 // TLS SignatureAlgorithm
	signature  []byte
}

// parseList parses ext, the SCT list extension's value: a DER OCTET
// STRING holding a TLS SignedCertificateTimestampList (RFC 6962 §3.3).
// Every SCT must parse, as a version 1 SCT, and there may be at most
// maxSCTs.
func parseList(ext []byte) ([]sct, error) {
	in := cryptobyte.String(ext)
	var octets, list cryptobyte.String
	if !in.ReadASN1(&octets, asn1.OCTET_STRING) || !in.Empty() ||
		!octets.ReadUint16LengthPrefixed(&list) || !octets.Empty() || list.Empty() {
		return nil, fmt.Errorf("%w: SCT list is not a DER OCTET STRING holding one non-empty list", ErrInvalid)
	}
	var out []sct
	for !list.Empty() {
		if len(out) == maxSCTs {
			return nil, fmt.Errorf("%w: more than %d SCTs", ErrInvalid, maxSCTs)
		}
		var one cryptobyte.String
		var s sct
		if !list.ReadUint16LengthPrefixed(&one) || !s.parse(one) {
			return nil, fmt.Errorf("%w: SCT %d is malformed", ErrInvalid, len(out))
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *sct) parse(in cryptobyte.String) bool {
	var ext, sig cryptobyte.String
	ok := in.ReadUint8(&s.version) && in.CopyBytes(s.logID[:]) && in.ReadUint64(&s.timestamp) &&
		in.ReadUint16LengthPrefixed(&ext) && in.ReadUint8(&s.hash) && in.ReadUint8(&s.sigAlg) &&
		in.ReadUint16LengthPrefixed(&sig) && in.Empty()
	s.extensions, s.signature = ext, sig
	return ok
}
