package sigverify_test

import (
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"
)

// TestTrustedRootValidityInProtoNamesIsNotIgnored: protojson reads a
// field by its proto name too ("valid_for" for "validFor"); a certificate
// authority's validity so spelled bounds what sigstore-go trusts, so it
// must not leave the authority trusted for ever here.
func TestTrustedRootValidityInProtoNamesIsNotIgnored(t *testing.T) {
	vs := newVirtual(t)
	artifact := []byte("catalog manifest")
	raw := marshal(t, signing{v: vs, identity: identity, issuer: issuer, artifact: artifact}.make(t))
	var tr map[string]any
	if err := json.Unmarshal(vs.trustedRoot(t, vs, nil), &tr); err != nil {
		t.Fatal(err)
	}
	ca := tr["certificateAuthorities"].([]any)[0].(map[string]any)
	delete(ca, "validFor")
	now := time.Now()
	ca["valid_for"] = map[string]any{"start": now.Add(-5 * time.Hour), "end": now.Add(-4 * time.Hour)}
	expired, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(artifact)
	theirs := oracle(expired, raw, sum[:], false, identity, issuer)
	mine := ours(expired, raw, sum[:], false, identity, issuer)
	t.Logf("sigstore-go: %v; ours: %v", theirs, mine)
	if theirs == nil {
		t.Fatal("sigstore-go trusted an authority outside its validity")
	}
	if mine == nil {
		t.Fatal("verified by an authority whose validity ended")
	}
}
