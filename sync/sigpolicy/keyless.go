package sigpolicy

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
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
	verifier *verify.Verifier
	identity verify.SubjectAlternativeNameMatcher
	issuer   verify.IssuerMatcher
}

var time0 time.Time

// Bounds on what one bundle may hold.
const (
	maxChain      = 4
	maxTlog       = 8
	maxTimestamps = 8
)

func loadKeyless(k Keyless) (*keyless, error) {
	if k.TrustedRoot == "" || (k.Identity == "") == (k.IdentityRegexp == "") || (k.Issuer == "") == (k.IssuerRegexp == "") {
		return nil, fmt.Errorf("%w: keyless needs trustedRoot, identity or identityRegexp, issuer or issuerRegexp", ErrConfig)
	}
	tr, err := root.NewTrustedRootFromPath(k.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted root %s: %v", ErrConfig, k.TrustedRoot, err)
	}
	out := &keyless{}
	if out.identity, err = verify.NewSANMatcher(k.Identity, k.IdentityRegexp); err != nil {
		return nil, fmt.Errorf("%w: identity: %v", ErrConfig, err)
	}
	if out.issuer, err = verify.NewIssuerMatcher(k.Issuer, k.IssuerRegexp); err != nil {
		return nil, fmt.Errorf("%w: issuer: %v", ErrConfig, err)
	}
	// A short-lived certificate needs a trusted time: the log's or a
	// timestamp authority's.
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	switch {
	case !k.IgnoreTlog && len(tr.RekorLogs()) == 0:
		return nil, fmt.Errorf("%w: trusted root %s has no transparency log (ignoreTlog accepts signatures without one)", ErrConfig, k.TrustedRoot)
	case !k.IgnoreTlog:
		opts = append(opts, verify.WithTransparencyLog(1))
	case len(tr.TimestampingAuthorities()) == 0:
		return nil, fmt.Errorf("%w: ignoreTlog needs a timestamp authority in trusted root %s", ErrConfig, k.TrustedRoot)
	}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	if out.verifier, err = verify.NewVerifier(tr, opts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
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
	if signed := signedDigests(b); len(signed) > 0 && !contains(signed, imageDigest) {
		return "", fmt.Errorf("%w: a bundle signs %s", ErrOtherDigest, signed[0])
	}
	if r.keyless == nil {
		return r.verifyKeyBundle(b, d)
	}
	return r.keyless.verify(b, d)
}

func (k *keyless) verify(b *bundle.Bundle, digest []byte) (string, error) {
	res, err := k.verifier.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	c := res.Signature.Certificate
	if c == nil {
		return "", fmt.Errorf("%w: signed with a key, not a certificate", ErrUntrusted)
	}
	if k.issuer.Verify(*c) != nil {
		return "", fmt.Errorf("%w: issuer %q does not match %s", ErrWrongIssuer, c.Issuer, describe(k.issuer.Issuer, k.issuer.Regexp.String()))
	}
	if k.identity.Verify(*c) != nil {
		return "", fmt.Errorf("%w: identity %q does not match %s", ErrWrongIdentity, c.SubjectAlternativeName, describe(k.identity.SubjectAlternativeName, k.identity.Regexp.String()))
	}
	return fmt.Sprintf("keyless identity %s issuer %s", c.SubjectAlternativeName, c.Issuer), nil
}

func describe(exact, re string) string {
	if exact != "" {
		return fmt.Sprintf("%q", exact)
	}
	return "regexp " + re
}

// errMalformed is a bundle that cannot be read or exceeds the bounds.
var errMalformed = fmt.Errorf("%w: malformed bundle", ErrUntrusted)

// parseBundle reads a bundle within the bounds.
func parseBundle(raw []byte) (*bundle.Bundle, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	vm := b.GetVerificationMaterial()
	switch {
	case len(vm.GetX509CertificateChain().GetCertificates()) > maxChain:
		return nil, fmt.Errorf("%w: certificate chain longer than %d", errMalformed, maxChain)
	case len(vm.GetTlogEntries()) > maxTlog:
		return nil, fmt.Errorf("%w: more than %d log entries", errMalformed, maxTlog)
	case len(vm.GetTimestampVerificationData().GetRfc3161Timestamps()) > maxTimestamps:
		return nil, fmt.Errorf("%w: more than %d timestamps", errMalformed, maxTimestamps)
	}
	return &b, nil
}

// signedDigests are the sha256 digests a bundle says it signs: the
// message digest, or the subjects of an in-toto statement. Only to name
// the failure: sigstore-go checks the signature binds them.
func signedDigests(b *bundle.Bundle) []string {
	if m := b.GetMessageSignature().GetMessageDigest(); m != nil {
		if m.GetAlgorithm().String() != "SHA2_256" {
			return nil
		}
		return []string{"sha256:" + hex.EncodeToString(m.GetDigest())}
	}
	var st struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	env := b.GetDsseEnvelope()
	if env == nil || env.GetPayloadType() != "application/vnd.in-toto+json" || json.Unmarshal(env.GetPayload(), &st) != nil {
		return nil
	}
	var out []string
	for _, s := range st.Subject {
		if h := s.Digest["sha256"]; h != "" {
			out = append(out, "sha256:"+h)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
