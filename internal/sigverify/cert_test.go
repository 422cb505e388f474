package sigverify_test

import (
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// TestKeylessRefusesIssuerExtensionsThatDisagree: a certificate naming
// two OIDC issuers, in the current and the legacy extension, in either
// order, has no identity: readers take one or the other.
func TestKeylessRefusesIssuerExtensionsThatDisagree(t *testing.T) {
	vs := newVirtual(t)
	trusted := vs.trustedRoot(t, vs, nil)
	current, err := asn1.MarshalWithParams("https://elsewhere.example", "utf8")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]signing{
		"legacy after current": {legacy: false, extra: []pkix.Extension{{Id: oidIssuerV1, Value: []byte("https://elsewhere.example")}}},
		"current after legacy": {legacy: true, extra: []pkix.Extension{{Id: oidIssuerV2, Value: current}}},
	} {
		t.Run(name, func(t *testing.T) {
			s.v, s.identity, s.issuer, s.artifact = vs, identity, issuer, []byte("catalog manifest")
			sum := sha256.Sum256(s.artifact)
			raw := marshal(t, s.make(t))
			for _, iss := range []string{issuer, "https://elsewhere.example"} {
				if err := ours(trusted, raw, sum[:], false, identity, iss); err == nil {
					t.Fatalf("verified for issuer %s", iss)
				}
			}
		})
	}
}
