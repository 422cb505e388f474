package sigpolicy

import (
	"crypto"
	"encoding/json"
	"fmt"
	"os"

	"github.com/catalogsync/catalogsync/internal/sigverify"
	"github.com/catalogsync/catalogsync/sync/source"
)

// key is one trusted public key: for tag signatures, and for bundles
// signed with it (whatever their key hint and time: a key-based
// signature carries no certificate to bound its time).
type key struct {
	file string
	pub  crypto.PublicKey
}

func loadKeys(files []string) ([]key, error) {
	var out []key
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		pub, err := sigverify.ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		out = append(out, key{file: f, pub: pub})
	}
	return out, nil
}

// verifyKeyBundle verifies a bundle signed with one of the keys.
func (r *requirement) verifyKeyBundle(b *sigverify.Bundle, digest []byte) (string, error) {
	var last error
	for _, k := range r.keys {
		err := sigverify.VerifyWithKey(b, digest, k.pub)
		if err == nil {
			return "sigstore bundle, key " + k.file, nil
		}
		last = err
	}
	return "", fmt.Errorf("%w: bundle not signed by a trusted key: %v", ErrUntrusted, last)
}

// payload is cosign's simple-signing payload.
type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// verifyTagSignature verifies a signature of the cosign tag scheme.
func (r *requirement) verifyTagSignature(s source.CosignSignature, digest string) (string, error) {
	for _, k := range r.keys {
		if sigverify.VerifyMessage(k.pub, s.Payload, s.Signature) != nil {
			continue
		}
		var pl payload
		if json.Unmarshal(s.Payload, &pl) != nil || pl.Critical.Type != "cosign container image signature" {
			continue
		}
		if pl.Critical.Image.DockerManifestDigest != digest {
			return "", fmt.Errorf("%w: the trusted key signed another digest", ErrOtherDigest)
		}
		return "cosign key " + k.file, nil
	}
	return "", fmt.Errorf("%w: none is by a trusted key", ErrUntrusted)
}
