// Package sigpolicy requires catalog images to carry a cosign signature,
// key-based, found by the cosign tag scheme (sha256-<hex>.sig), in the
// spirit of the containers policy.json sigstoreSigned requirement: per
// image prefix, the public keys one of which must have signed a payload
// naming the image's digest. Verification uses sigstore's signature
// package.
package sigpolicy

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/catalogsync/catalogsync/sync/source"
)

var (
	// ErrUnsigned means the policy requires a signature and there is none.
	ErrUnsigned = errors.New("image is not signed")
	// ErrBadSignature means signatures exist but none verifies for this digest.
	ErrBadSignature = errors.New("no valid signature")
	// ErrConfig means the policy cannot be loaded.
	ErrConfig = errors.New("invalid signature policy")
)

// Rule requires images whose name starts with Prefix (host/repository
// path elements) to be signed by one of the keys in KeyFiles (PEM public
// keys).
type Rule struct {
	Prefix   string   `json:"prefix"`
	KeyFiles []string `json:"keys"`
}

type rule struct {
	prefix    string
	verifiers []signature.Verifier
	names     []string
}

// Policy checks images against the rules; the longest matching prefix
// applies and images no rule matches need no signature.
type Policy struct {
	rules []rule
	src   *source.Client
}

// New loads the rules' keys; src fetches the signatures.
func New(src *source.Client, rules []Rule) (*Policy, error) {
	p := &Policy{src: src}
	for i, r := range rules {
		if r.Prefix == "" || len(r.KeyFiles) == 0 {
			return nil, fmt.Errorf("%w: rule %d needs a prefix and keys", ErrConfig, i)
		}
		rr := rule{prefix: strings.TrimSuffix(r.Prefix, "/")}
		for _, f := range r.KeyFiles {
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
			rr.verifiers, rr.names = append(rr.verifiers, v), append(rr.names, f)
		}
		p.rules = append(p.rules, rr)
	}
	return p, nil
}

func (p *Policy) match(name string) (rule, bool) {
	best, n := rule{}, -1
	for _, r := range p.rules {
		if (name == r.prefix || strings.HasPrefix(name, r.prefix+"/")) && len(r.prefix) > n {
			best, n = r, len(r.prefix)
		}
	}
	return best, n >= 0
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

// Check verifies res against the policy for image (the catalog's
// reference). It returns what verified it ("" when no rule applies).
func (p *Policy) Check(ctx context.Context, image string, res source.Resolved) (string, error) {
	r, err := source.ParseRef(image)
	if err != nil || r.Scheme != "reg" {
		return "", nil
	}
	rl, ok := p.match(r.Registry + "/" + r.Repository)
	if !ok {
		return "", nil
	}
	sigs, err := p.src.CosignSignatures(ctx, res)
	if err != nil {
		return "", err
	}
	if len(sigs) == 0 {
		return "", fmt.Errorf("%w: %s has no cosign signature (tag %s)", ErrUnsigned, res.Ref, strings.Replace(res.Digest, ":", "-", 1)+".sig")
	}
	otherDigest := false
	for _, s := range sigs {
		for i, v := range rl.verifiers {
			if v.VerifySignature(bytes.NewReader(s.Signature), bytes.NewReader(s.Payload)) != nil {
				continue
			}
			var pl payload
			if json.Unmarshal(s.Payload, &pl) != nil || pl.Critical.Type != "cosign container image signature" {
				continue
			}
			if pl.Critical.Image.DockerManifestDigest != res.Digest {
				otherDigest = true
				continue
			}
			return "cosign key " + rl.names[i], nil
		}
	}
	why := "none is by a trusted key"
	if otherDigest {
		why = "the trusted key signed another digest"
	}
	return "", fmt.Errorf("%w: %s: %d signature(s), %s", ErrBadSignature, res.Ref, len(sigs), why)
}
