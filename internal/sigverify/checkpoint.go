package sigverify

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// verifyCheckpoint verifies a Rekor v1 checkpoint (a signed note whose
// every signature is by pub, each prefixed by the key hint: the first 4
// bytes of the SHA-256 of the key's PKIX DER) and returns its root hash.
func verifyCheckpoint(envelope string, pub crypto.PublicKey) ([]byte, error) {
	text, sigs, ok := splitNote(envelope)
	if !ok {
		return nil, errors.New("malformed signed note")
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	keyHash := sha256.Sum256(der)
	digest := sha256.Sum256([]byte(text))
	for _, s := range sigs {
		if !bytes.Equal(s[:4], keyHash[:4]) {
			return nil, errors.New("signed by another key")
		}
		if err := verifyNoteSig(pub, []byte(text), digest[:], s[4:]); err != nil {
			return nil, err
		}
	}
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || !rekorV1Origin(lines[0]) {
		return nil, errors.New("not a Rekor v1 checkpoint")
	}
	if _, err := strconv.ParseUint(lines[1], 10, 64); err != nil {
		return nil, errors.New("tree size is not a number")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil {
		return nil, errors.New("root hash is not base64")
	}
	return root, nil
}

// rekorV1Origin says whether a checkpoint's origin ends as Rekor v1's
// do: " - " and the tree ID.
func rekorV1Origin(s string) bool {
	i := strings.LastIndex(s, " - ")
	if i < 0 || i+3 == len(s) {
		return false
	}
	for _, c := range s[i+3:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// maxNoteSigs bounds a checkpoint's signatures, each a check by the log's
// key: a Rekor v1 log signs its checkpoint once, and repeats of its
// signature would cost a check each.
const maxNoteSigs = 8

// splitNote splits a signed note into its text (ending in a newline) and
// its signatures (key hint then signature), at least one and at most
// maxNoteSigs.
func splitNote(n string) (string, [][]byte, bool) {
	i := strings.LastIndex(n, "\n\n")
	if i < 0 || !strings.HasSuffix(n, "\n") {
		return "", nil, false
	}
	text, rest := n[:i+1], n[i+2:]
	lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	if len(lines) > maxNoteSigs {
		return "", nil, false
	}
	var sigs [][]byte
	for _, line := range lines {
		f := strings.Fields(strings.TrimPrefix(line, "\u2014 "))
		if !strings.HasPrefix(line, "\u2014 ") || len(f) != 2 {
			return "", nil, false
		}
		raw, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(raw) < 5 {
			return "", nil, false
		}
		sigs = append(sigs, raw)
	}
	return text, sigs, len(sigs) > 0
}

func verifyNoteSig(pub crypto.PublicKey, msg, digest, sig []byte) error {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if !ed25519.Verify(k, msg, sig) {
			return errBadSignature
		}
		return nil
	case *ecdsa.PublicKey:
		return verifyDigestECDSA(k, digest, sig)
	}
	return verifyDigest(pub, digest, sig)
}

// verifyDigestECDSA verifies an ECDSA signature of digest.
func verifyDigestECDSA(pub crypto.PublicKey, digest, sig []byte) error {
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return fmt.Errorf("unsupported log key type %T", pub)
	}
	if !ecdsa.VerifyASN1(k, digest, sig) {
		return errBadSignature
	}
	return nil
}
