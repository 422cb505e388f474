// Package sigpolicy requires catalog images to be signed, in the spirit of
// the containers policy.json sigstoreSigned requirement: a requirement
// per image prefix (the longest matching prefix wins) or per catalog
// (which wins over any prefix), met by one of its public keys or by a
// keyless (certificate) signature whose identity and issuer match.
//
// Signatures are found as sigstore bundles attached to the image digest as
// OCI referrers and, for keys, by the cosign tag scheme (sha256-<hex>.sig),
// in the image's registry repository or in its OCI layout (ocidir://). A
// requirement that applies is never skipped: an image whose signatures
// cannot be read fails.
// Bundles and tag signatures are verified by internal/sigverify, on the
// standard library.
package sigpolicy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/sync/source"
)

var (
	// ErrUnsigned means the policy requires a signature and there is none.
	ErrUnsigned = errors.New("image is not signed")
	// ErrBadSignature means signatures exist but none verifies for this
	// digest; the errors below wrapped with it say why.
	ErrBadSignature = errors.New("no valid signature")
	// ErrWrongIdentity means a certificate verified, for another identity.
	ErrWrongIdentity = errors.New("signed by another identity")
	// ErrWrongIssuer means a certificate verified, from another OIDC issuer.
	ErrWrongIssuer = errors.New("identity from another issuer")
	// ErrOtherDigest means a trusted signature names another image digest.
	ErrOtherDigest = errors.New("signature of another digest")
	// ErrUntrusted means the signature does not verify against the trust
	// material (unknown CA or key, no trusted time, bad signature).
	ErrUntrusted = errors.New("not verified by the trust material")
	// ErrConfig means the policy cannot be loaded.
	ErrConfig = errors.New("invalid signature policy")
)

// Requirement is what a signature must satisfy: made by one of KeyFiles
// (PEM public keys), or Keyless.
type Requirement struct {
	KeyFiles []string `json:"keys,omitempty"`
	Keyless  *Keyless `json:"keyless,omitempty"`
}

// Rule applies its requirement to images whose name starts with Prefix
// (host/repository path elements). A rule with a Name may be referenced by
// catalogs; a rule with only a Name applies to no prefix.
type Rule struct {
	Name   string `json:"name,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Requirement
}

// CatalogRule is one catalog's own requirement: the rule named Rule, or
// the requirement given inline.
type CatalogRule struct {
	Rule string `json:"rule,omitempty"`
	Requirement
}

// requirement is a loaded Requirement; label names it in messages.
type requirement struct {
	label   string
	keys    []key
	keyless *keyless
}

// Policy checks images against the rules. A catalog's own requirement
// wins; otherwise the longest matching prefix applies, and images no rule
// matches need no signature.
type Policy struct {
	prefixes []prefixRule
	catalogs map[string]*requirement
	src      *source.Client
}

type prefixRule struct {
	prefix string
	req    *requirement
}

// New loads the rules and the catalogs' own requirements (by catalog
// name); src fetches the signatures.
func New(src *source.Client, rules []Rule, catalogs map[string]CatalogRule) (*Policy, error) {
	p := &Policy{src: src, catalogs: map[string]*requirement{}}
	named := map[string]*requirement{}
	for i, r := range rules {
		if r.Prefix == "" && r.Name == "" {
			return nil, fmt.Errorf("%w: rule %d needs a prefix or a name", ErrConfig, i)
		}
		label := fmt.Sprintf("rule for prefix %q", r.Prefix)
		if r.Name != "" {
			label = fmt.Sprintf("rule %q", r.Name)
		}
		req, err := load(label, r.Requirement)
		if err != nil {
			return nil, err
		}
		if r.Name != "" {
			if named[r.Name] != nil {
				return nil, fmt.Errorf("%w: two rules named %q", ErrConfig, r.Name)
			}
			named[r.Name] = req
		}
		if r.Prefix != "" {
			p.prefixes = append(p.prefixes, prefixRule{rulePrefix(r.Prefix), req})
		}
	}
	for name, c := range catalogs {
		req, err := catalogRequirement(name, c, named)
		if err != nil {
			return nil, err
		}
		p.catalogs[name] = req
	}
	return p, nil
}

func catalogRequirement(name string, c CatalogRule, named map[string]*requirement) (*requirement, error) {
	inline := len(c.KeyFiles) > 0 || c.Keyless != nil
	switch {
	case c.Rule != "" && inline:
		return nil, fmt.Errorf("%w: catalog %q: give a rule or a requirement, not both", ErrConfig, name)
	case c.Rule != "":
		req := named[c.Rule]
		if req == nil {
			return nil, fmt.Errorf("%w: catalog %q: no rule named %q", ErrConfig, name, c.Rule)
		}
		return req, nil
	}
	return load(fmt.Sprintf("catalog %q", name), c.Requirement)
}

// load checks and loads a requirement: keys or keyless, not both.
func load(label string, r Requirement) (*requirement, error) {
	if (len(r.KeyFiles) > 0) == (r.Keyless != nil) {
		return nil, fmt.Errorf("%w: %s needs keys or keyless (one of them)", ErrConfig, label)
	}
	req := &requirement{label: label}
	var err error
	if r.Keyless != nil {
		req.keyless, err = loadKeyless(*r.Keyless)
	} else {
		req.keys, err = loadKeys(r.KeyFiles)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return req, nil
}

// layoutScheme begins the name of an OCI layout in rules and messages.
const layoutScheme = "ocidir://"

// imageName is the name prefix rules match: host/repository for a
// registry image, ocidir:// and the cleaned directory for an OCI layout
// (so a rule for ocidir:///srv/layouts covers the layouts below it, and
// ../ cannot step out of it); ok is false for a scheme whose signatures
// cannot be read.
func imageName(r ref.Ref) (string, bool) {
	switch r.Scheme {
	case "reg":
		return r.Registry + "/" + r.Repository, true
	case "ocidir":
		return layoutScheme + filepath.Clean(r.Path), true
	}
	return r.Scheme + "://" + r.Path, false
}

// Checkable says why the signatures of the image r names cannot be
// checked, nil when they can: a configuration that requires a signature
// of such an image is refused at load instead of failing every sync.
func Checkable(r ref.Ref) error {
	if _, ok := imageName(r); !ok {
		return fmt.Errorf("%w: signatures of %s:// images cannot be read; use a registry or an ocidir:// layout", ErrConfig, r.Scheme)
	}
	return nil
}

// rulePrefix is a rule's prefix as imageName spells names.
func rulePrefix(prefix string) string {
	if dir, ok := strings.CutPrefix(prefix, layoutScheme); ok && dir != "" {
		return layoutScheme + filepath.Clean(dir)
	}
	return strings.TrimSuffix(prefix, "/")
}

// requirementFor picks the requirement of a catalog and its image name.
func (p *Policy) requirementFor(catalog, name string) *requirement {
	if req := p.catalogs[catalog]; req != nil {
		return req
	}
	var best *requirement
	n := -1
	for _, r := range p.prefixes {
		if (name == r.prefix || strings.HasPrefix(name, strings.TrimSuffix(r.prefix, "/")+"/")) && len(r.prefix) > n {
			best, n = r.req, len(r.prefix)
		}
	}
	return best
}

// Check verifies res against the requirement for catalog and its image
// (the configured reference). It returns what verified it ("" when no
// requirement applies).
func (p *Policy) Check(ctx context.Context, catalog, image string, res source.Resolved) (string, error) {
	r, err := source.ParseRef(image)
	if err != nil {
		return "", err
	}
	name, ok := imageName(r)
	req := p.requirementFor(catalog, name)
	switch {
	case req == nil:
		return "", nil
	case !ok:
		// Never skipped in silence: a requirement that cannot be checked
		// fails the sync.
		return "", fmt.Errorf("%w: %s: signatures of %s:// images cannot be read (%s)", ErrUnsigned, req.label, r.Scheme, image)
	}
	bundles, err := p.src.SigstoreBundles(ctx, res)
	if err != nil {
		return "", err
	}
	var sigs []source.CosignSignature
	if len(req.keys) > 0 {
		if sigs, err = p.src.CosignSignatures(ctx, res); err != nil {
			return "", err
		}
	}
	if len(bundles) == 0 && len(sigs) == 0 {
		return "", fmt.Errorf("%w: %s: %s has no signature (no sigstore bundle referrer%s)", ErrUnsigned, req.label, res.Ref, tagHint(req, res))
	}
	var worst verdict
	for _, b := range bundles {
		by, err := req.verifyBundle(b, res.Digest)
		if err == nil {
			return by + " (" + req.label + ")", nil
		}
		worst.add(err)
	}
	for _, s := range sigs {
		by, err := req.verifyTagSignature(s, res.Digest)
		if err == nil {
			return by + " (" + req.label + ")", nil
		}
		worst.add(err)
	}
	return "", fmt.Errorf("%w: %s: %s: %d signature(s), %w", ErrBadSignature, req.label, res.Ref, len(bundles)+len(sigs), worst.err)
}

func tagHint(req *requirement, res source.Resolved) string {
	if len(req.keys) == 0 {
		return ""
	}
	return ", no cosign signature tag " + strings.Replace(res.Digest, ":", "-", 1) + ".sig"
}

// verdict keeps the most telling of the failures: a signature that
// verified but for another identity says more than an untrusted one.
type verdict struct{ err error }

var rank = []error{ErrWrongIdentity, ErrWrongIssuer, ErrOtherDigest, ErrUntrusted}

func (v *verdict) add(err error) {
	if v.err == nil || rankOf(err) < rankOf(v.err) {
		v.err = err
	}
}

func rankOf(err error) int {
	for i, e := range rank {
		if errors.Is(err, e) {
			return i
		}
	}
	return len(rank)
}
