package sigverify_test

import (
	"bytes"
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
	artifact := []byte("catalog manifest")
	raw, tr := signedWithRoot(t, artifact)
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

// TestTrustedRootValidityHiddenByARepeatedKeyIsNotIgnored: encoding/json
// takes a key's last occurrence and matches keys whatever their case, so
// a later "validFor": null (or "validfor") would hide an authority's
// validity that protojson reads, or refuses the root for.
func TestTrustedRootValidityHiddenByARepeatedKeyIsNotIgnored(t *testing.T) {
	artifact := []byte("catalog manifest")
	raw, tr := signedWithRoot(t, artifact)
	now := time.Now()
	tr["certificateAuthorities"].([]any)[0].(map[string]any)["validFor"] = map[string]any{"start": now.Add(-5 * time.Hour), "end": now.Add(-4 * time.Hour)}
	expired, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	// The certificate authorities come first: the first validity is theirs.
	i := bytes.Index(expired, []byte(`"validFor":{`))
	end := i + bytes.IndexByte(expired[i:], '}') + 1
	sum := sha256.Sum256(artifact)
	for _, hide := range []string{`,"validFor":null`, `,"validfor":null`} {
		root := append(append(append([]byte{}, expired[:end]...), hide...), expired[end:]...)
		theirs := oracle(root, raw, sum[:], false, identity, issuer)
		mine := ours(root, raw, sum[:], false, identity, issuer)
		t.Logf("%s: sigstore-go: %v; ours: %v", hide, theirs, mine)
		if theirs == nil || mine == nil {
			t.Errorf("%s: verified by an authority whose validity ended (sigstore-go %v, ours %v)", hide, theirs, mine)
		}
	}
}

// signedWithRoot signs artifact with a fresh virtual sigstore and returns
// the bundle and its trusted root decoded, for a test to change.
func signedWithRoot(t *testing.T, artifact []byte) (bundle []byte, root map[string]any) {
	t.Helper()
	vs := newVirtual(t)
	bundle = marshal(t, signing{v: vs, identity: identity, issuer: issuer, artifact: artifact}.make(t))
	if err := json.Unmarshal(vs.trustedRoot(t, vs, nil), &root); err != nil {
		t.Fatal(err)
	}
	return bundle, root
}
