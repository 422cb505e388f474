package sigpolicy

import (
	"bytes"
	"crypto"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/catalogsync/catalogsync/sync/source"
)

// key is one trusted public key: for tag signatures, and as the trust
// material of bundles signed with it.
type key struct {
	file     string
	verifier signature.Verifier
	bundles  *verify.Verifier
}

func loadKeys(files []string) ([]key, error) {
	var out []key
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		// A key is trusted whatever the hint and time of a bundle: a
		// key-based signature carries no certificate to bound its time.
		material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(v, time0, time0), nil
		})
		bv, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		out = append(out, key{file: f, verifier: v, bundles: bv})
	}
	return out, nil
}

// verifyKeyBundle verifies a bundle signed with one of the keys.
func (r *requirement) verifyKeyBundle(b *bundle.Bundle, digest []byte) (string, error) {
	var last error
	for _, k := range r.keys {
		_, err := k.bundles.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithKey()))
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
		if k.verifier.VerifySignature(bytes.NewReader(s.Signature), bytes.NewReader(s.Payload)) != nil {
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
