package sigverify_test

import (
	"crypto/sha256"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
)

// FuzzKeylessVerify feeds mutations of valid keyless bundles (a v0.1
// message signature with a chain, a v0.3 DSSE envelope with an inclusion
// proof; both with a timestamp) to Parse and Keyless.Verify, with and
// without the log. Nothing may panic, and what verifies here must verify
// in sigstore-go too, unless its stricter JSON reader refuses the bytes.
// The keys are made afresh in each run: a stored input no longer
// verifies, but still walks the readers.
func FuzzKeylessVerify(f *testing.F) {
	vs := newVirtual(f)
	artifact := []byte("catalog manifest")
	trusted := vs.trustedRoot(f, vs, nil)
	msg := signing{v: vs, identity: identity, issuer: issuer, artifact: artifact}
	env := msg
	env.dsse = true
	m := mutated(msg.make(f), func(c *protobundle.Bundle) { c.VerificationMaterial.Content = chainOf(c, vs.inter.Raw) })
	f.Add(marshal(f, m), false)
	f.Add(marshal(f, env.make(f)), false)
	f.Add(marshal(f, env.make(f)), true)
	sum := sha256.Sum256(artifact)
	f.Fuzz(func(t *testing.T, raw []byte, ignoreTlog bool) {
		if ours(trusted, raw, sum[:], ignoreTlog, identity, issuer) != nil {
			return
		}
		if err := oracle(trusted, raw, sum[:], ignoreTlog, identity, issuer); err != nil && !unreadable(raw) {
			t.Fatalf("verified here, sigstore-go: %v", err)
		}
	})
}

// unreadable says whether sigstore-go's bundle reader refuses raw.
func unreadable(raw []byte) bool {
	var b bundle.Bundle
	return b.UnmarshalJSON(raw) != nil
}
