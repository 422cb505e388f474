package sigverify

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// TlogEntry is a Rekor v1 transparency log entry of a bundle.
type TlogEntry struct {
	LogIndex pbInt64 `json:"logIndex"`
	LogID    struct {
		KeyID []byte `json:"keyId"`
	} `json:"logId"`
	KindVersion *struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
	} `json:"kindVersion"`
	IntegratedTime   pbInt64 `json:"integratedTime"`
	InclusionPromise *struct {
		SignedEntryTimestamp []byte `json:"signedEntryTimestamp"`
	} `json:"inclusionPromise"`
	InclusionProof *struct {
		LogIndex   pbInt64  `json:"logIndex"`
		RootHash   []byte   `json:"rootHash"`
		TreeSize   pbInt64  `json:"treeSize"`
		Hashes     [][]byte `json:"hashes"`
		Checkpoint struct {
			Envelope string `json:"envelope"`
		} `json:"checkpoint"`
	} `json:"inclusionProof"`
	CanonicalizedBody []byte `json:"canonicalizedBody"`
}

func (e *TlogEntry) hasPromise() bool {
	return e.InclusionPromise != nil && len(e.InclusionPromise.SignedEntryTimestamp) > 0
}

// checkShape checks what an entry must hold: a v0.1 bundle's entries an
// inclusion promise, a later bundle's an inclusion proof.
func (e *TlogEntry) checkShape(minor int) error {
	switch {
	case len(e.CanonicalizedBody) == 0 || e.LogIndex < 0 || len(e.LogID.KeyID) == 0 || e.KindVersion == nil:
		return errors.New("needs a body, a log index, a log ID and a kind")
	case e.InclusionProof != nil && e.InclusionProof.Checkpoint.Envelope == "":
		return errors.New("an inclusion proof without a checkpoint")
	case minor == 1 && !e.hasPromise():
		return errors.New("a v0.1 bundle's entry needs an inclusion promise")
	case minor > 1 && e.InclusionProof == nil:
		return errors.New("needs an inclusion proof")
	}
	return nil
}

// verifyTlog verifies the entries of logs the root trusts and that they
// bind the bundle's signature, certificate and content; it returns the
// integrated times vouched for by inclusion promises (one per log). At
// least one entry must verify.
func (tr *TrustedRoot) verifyTlog(b *Bundle, leaf *x509.Certificate, sig []byte) ([]time.Time, error) {
	entries := b.VerificationMaterial.TlogEntries
	for i := range entries {
		for j := i + 1; j < len(entries); j++ {
			if bytes.Equal(entries[i].LogID.KeyID, entries[j].LogID.KeyID) && entries[i].LogIndex == entries[j].LogIndex {
				return nil, errors.New("duplicate log entries")
			}
		}
	}
	verified := map[string]bool{}
	var times []time.Time
	for i := range entries {
		e := &entries[i]
		body, err := parseBody(e)
		if err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		key := tr.tlogs[string(e.LogID.KeyID)]
		if key == nil {
			continue // another log's entry: not evidence, not a failure
		}
		// A promise that does not verify makes the entry no evidence.
		if e.hasPromise() && tr.verifySET(e, key) != nil {
			continue
		}
		if e.InclusionProof != nil {
			if err := verifyInclusion(e, key); err != nil {
				return nil, fmt.Errorf("log entry %d: %w", i, err)
			}
		}
		if err := body.binds(b, leaf, sig); err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		t := time.Unix(int64(e.IntegratedTime), 0)
		if e.IntegratedTime != 0 && (t.Before(leaf.NotBefore) || t.After(leaf.NotAfter)) {
			return nil, fmt.Errorf("log entry %d: integrated time outside the certificate's validity", i)
		}
		id := string(e.LogID.KeyID)
		if e.hasPromise() && !verified[id] {
			times = append(times, t)
		}
		verified[id] = true
	}
	if len(verified) == 0 {
		return nil, errors.New("no entry of a trusted transparency log verifies")
	}
	return times, nil
}

// verifySET verifies the inclusion promise: the log's ECDSA signature of
// the canonical JSON of the entry's body, time, log ID and index.
func (tr *TrustedRoot) verifySET(e *TlogEntry, key *logKey) error {
	t := time.Unix(int64(e.IntegratedTime), 0)
	if key.start.IsZero() || !within(t, key.start, key.end) {
		return errors.New("the log's key is not valid at the integrated time")
	}
	payload, err := json.Marshal(struct {
		Body           []byte `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogID          string `json:"logID"`
		LogIndex       int64  `json:"logIndex"`
	}{e.CanonicalizedBody, int64(e.IntegratedTime), hex.EncodeToString(e.LogID.KeyID), int64(e.LogIndex)})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	return verifyDigestECDSA(key.pub, sum[:], e.InclusionPromise.SignedEntryTimestamp)
}

// verifyInclusion verifies the RFC 6962 audit path of the entry's body
// to the proof's root, and that a checkpoint signed by the log commits
// to that root.
func verifyInclusion(e *TlogEntry, key *logKey) error {
	p := e.InclusionProof
	if p.LogIndex < 0 || p.TreeSize < 0 {
		return errors.New("negative index or tree size in the inclusion proof")
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(e.CanonicalizedBody)
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(p.LogIndex), uint64(p.TreeSize), leaf, p.Hashes, p.RootHash); err != nil {
		return fmt.Errorf("inclusion proof: %w", err)
	}
	root, err := verifyCheckpoint(p.Checkpoint.Envelope, key.pub)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if !bytes.Equal(root, p.RootHash) {
		return errors.New("the checkpoint's root is not the inclusion proof's")
	}
	return nil
}

// entryBody is what a hashedrekord or dsse 0.0.1 entry records.
type entryBody struct {
	kind     string
	sig      []byte
	verifier []byte // PEM certificate or public key
	hashAlg  string // hashedrekord: the artifact digest's algorithm
	digest   []byte // hashedrekord: the artifact digest; dsse: the payload's
}

func parseBody(e *TlogEntry) (*entryBody, error) {
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Spec       json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(e.CanonicalizedBody, &head); err != nil {
		return nil, fmt.Errorf("body: %v", err)
	}
	// The body, which the log signs, says what it is: not the entry's
	// kindVersion, which nothing signs.
	switch {
	case head.Kind == "hashedrekord" && head.APIVersion == "0.0.1":
		return parseHashedRekord(head.Spec)
	case head.Kind == "dsse" && head.APIVersion == "0.0.1":
		return parseDSSE(head.Spec)
	}
	return nil, fmt.Errorf("log entry kind %s %s is not supported (hashedrekord 0.0.1 and dsse 0.0.1 are)", head.Kind, head.APIVersion)
}

func parseHashedRekord(spec []byte) (*entryBody, error) {
	var s struct {
		Data struct {
			Hash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"hash"`
		} `json:"data"`
		Signature struct {
			Content   []byte `json:"content"`
			PublicKey struct {
				Content []byte `json:"content"`
			} `json:"publicKey"`
		} `json:"signature"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("hashedrekord: %v", err)
	}
	d, err := hex.DecodeString(s.Data.Hash.Value)
	if err != nil || len(d) == 0 || len(s.Signature.Content) == 0 || len(s.Signature.PublicKey.Content) == 0 {
		return nil, errors.New("hashedrekord: needs a hex digest, a signature and a public key")
	}
	return &entryBody{kind: "hashedrekord", sig: s.Signature.Content, verifier: s.Signature.PublicKey.Content, hashAlg: s.Data.Hash.Algorithm, digest: d}, nil
}

func parseDSSE(spec []byte) (*entryBody, error) {
	var s struct {
		PayloadHash struct {
			Algorithm string `json:"algorithm"`
			Value     string `json:"value"`
		} `json:"payloadHash"`
		Signatures []struct {
			Signature []byte `json:"signature"`
			Verifier  []byte `json:"verifier"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("dsse: %v", err)
	}
	d, err := hex.DecodeString(s.PayloadHash.Value)
	if err != nil || s.PayloadHash.Algorithm != "sha256" || len(s.Signatures) == 0 {
		return nil, errors.New("dsse: needs a sha256 payload hash and a signature")
	}
	return &entryBody{kind: "dsse", sig: s.Signatures[0].Signature, verifier: s.Signatures[0].Verifier, digest: d}, nil
}

// binds checks the entry records the bundle's signature, certificate and
// content.
func (eb *entryBody) binds(b *Bundle, leaf *x509.Certificate, sig []byte) error {
	if !bytes.Equal(eb.sig, sig) {
		return errors.New("the entry records another signature")
	}
	blk, _ := pem.Decode(eb.verifier)
	if blk == nil {
		return errors.New("the entry's verifier is not PEM")
	}
	if c, err := x509.ParseCertificate(blk.Bytes); err != nil || !c.Equal(leaf) {
		return errors.New("the entry records another certificate")
	}
	switch m := b.MessageSignature; {
	case m != nil && eb.kind != "hashedrekord":
		return fmt.Errorf("a %s entry for a message signature", eb.kind)
	case m != nil:
		if m.MessageDigest == nil || hashName[m.MessageDigest.Algorithm] != eb.hashAlg || !bytes.Equal(m.MessageDigest.Digest, eb.digest) {
			return errors.New("the entry records another digest")
		}
	case eb.kind != "dsse":
		return fmt.Errorf("a %s entry for a DSSE envelope", eb.kind)
	default:
		if sum := sha256.Sum256(b.DsseEnvelope.Payload); !bytes.Equal(sum[:], eb.digest) {
			return errors.New("the entry records another payload")
		}
	}
	return nil
}

// hashName is a bundle's hash algorithm as a log entry names it.
var hashName = map[string]string{"SHA2_256": "sha256", "SHA2_384": "sha384", "SHA2_512": "sha512"}
