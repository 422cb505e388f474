package sigpolicy

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/catalogsync/catalogsync/internal/sigverify"
)

// Keyless requires a signature by a short-lived certificate issued by a
// certificate authority of the trusted root (a sigstore trusted_root.json)
// to Identity (the certificate's subject alternative name: an email or
// URI) as vouched for by Issuer (the OIDC issuer recorded in the
// certificate). Each is matched exactly, or by a regular expression.
type Keyless struct {
	TrustedRoot    string `json:"trustedRoot"`
	Identity       string `json:"identity,omitempty"`
	IdentityRegexp string `json:"identityRegexp,omitempty"`
	Issuer         string `json:"issuer,omitempty"`
	IssuerRegexp   string `json:"issuerRegexp,omitempty"`
	// IgnoreTlog accepts signatures without a transparency log entry; the
	// time must then come from a signed timestamp of a timestamp authority
	// in the trusted root. Risk: a signature never logged cannot be seen
	// by monitors of the log, so a misused identity goes unnoticed.
	IgnoreTlog bool `json:"ignoreTlog,omitempty"`
}

type keyless struct {
	verifier sigverify.Keyless
	identity matcher
	issuer   matcher
}

// matcher matches a value exactly, or by a regular expression.
type matcher struct {
	exact string
	re    *regexp.Regexp
}

func newMatcher(exact, expr string) (matcher, error) {
	if exact != "" {
		return matcher{exact: exact}, nil
	}
	re, err := regexp.Compile(expr)
	return matcher{re: re}, err
}

func (m matcher) match(s string) bool {
	if m.re != nil {
		return m.re.MatchString(s)
	}
	return s == m.exact
}

func (m matcher) String() string {
	if m.re != nil {
		return "regexp " + m.re.String()
	}
	return fmt.Sprintf("%q", m.exact)
}

func loadKeyless(k Keyless) (*keyless, error) {
	if k.TrustedRoot == "" || (k.Identity == "") == (k.IdentityRegexp == "") || (k.Issuer == "") == (k.IssuerRegexp == "") {
		return nil, fmt.Errorf("%w: keyless needs trustedRoot, identity or identityRegexp, issuer or issuerRegexp", ErrConfig)
	}
	tr, err := sigverify.LoadTrustedRoot(k.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted root %s: %v", ErrConfig, k.TrustedRoot, err)
	}
	out := &keyless{verifier: sigverify.Keyless{Root: tr, IgnoreTlog: k.IgnoreTlog}}
	if out.identity, err = newMatcher(k.Identity, k.IdentityRegexp); err != nil {
		return nil, fmt.Errorf("%w: identity: %v", ErrConfig, err)
	}
	if out.issuer, err = newMatcher(k.Issuer, k.IssuerRegexp); err != nil {
		return nil, fmt.Errorf("%w: issuer: %v", ErrConfig, err)
	}
	// A short-lived certificate needs a trusted time: the log's or a
	// timestamp authority's.
	switch {
	case !k.IgnoreTlog && !tr.HasTlogs():
		return nil, fmt.Errorf("%w: trusted root %s has no transparency log (ignoreTlog accepts signatures without one)", ErrConfig, k.TrustedRoot)
	case k.IgnoreTlog && !tr.HasTimestampAuthorities():
		return nil, fmt.Errorf("%w: ignoreTlog needs a timestamp authority in trusted root %s", ErrConfig, k.TrustedRoot)
	}
	return out, nil
}

// verifyBundle verifies one bundle (raw JSON) for the image digest.
func (r *requirement) verifyBundle(raw []byte, imageDigest string) (string, error) {
	b, err := parseBundle(raw)
	if err != nil {
		return "", err
	}
	alg, hexd, _ := strings.Cut(imageDigest, ":")
	d, err := hex.DecodeString(hexd)
	if alg != "sha256" || err != nil {
		return "", fmt.Errorf("%w: digest %s is not sha256", ErrUntrusted, imageDigest)
	}
	if signed := b.SignedDigests(); len(signed) > 0 && !contains(signed, imageDigest) {
		return "", fmt.Errorf("%w: a bundle signs %s", ErrOtherDigest, signed[0])
	}
	if r.keyless == nil {
		return r.verifyKeyBundle(b, d)
	}
	return r.keyless.verify(b, d)
}

func (k *keyless) verify(b *sigverify.Bundle, digest []byte) (string, error) {
	id, err := k.verifier.Verify(b, digest)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	if !k.issuer.match(id.Issuer) {
		return "", fmt.Errorf("%w: issuer %q does not match %s", ErrWrongIssuer, id.Issuer, k.issuer)
	}
	if !k.identity.match(id.SAN) {
		return "", fmt.Errorf("%w: identity %q does not match %s", ErrWrongIdentity, id.SAN, k.identity)
	}
	return fmt.Sprintf("keyless identity %s issuer %s", id.SAN, id.Issuer), nil
}

// parseBundle reads a bundle within the bounds.
func parseBundle(raw []byte) (*sigverify.Bundle, error) {
	b, err := sigverify.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return b, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
