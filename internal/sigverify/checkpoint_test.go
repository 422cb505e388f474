package sigverify_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
)

// TestCheckpointSignaturesAreBounded: a log signs its checkpoint once; a
// checkpoint repeating the log's signature line, each a signature check,
// is refused past the bound (900 lines cost 64 ms against 0.4 ms for one),
// and accepted within it.
func TestCheckpointSignaturesAreBounded(t *testing.T) {
	vs := newVirtual(t)
	artifact := []byte("catalog manifest")
	b := signing{v: vs, identity: identity, issuer: issuer, artifact: artifact, dsse: true}.make(t)
	trusted := vs.trustedRoot(t, vs, nil)
	sum := sha256.Sum256(artifact)
	for _, tc := range []struct {
		lines  int
		accept bool
	}{{1, true}, {8, true}, {9, false}, {900, false}} {
		c := mutated(b, func(c *protobundle.Bundle) {
			cp := c.VerificationMaterial.TlogEntries[0].InclusionProof.Checkpoint
			i := strings.LastIndex(cp.Envelope, "\n\n")
			cp.Envelope = cp.Envelope[:i+2] + strings.Repeat(cp.Envelope[i+2:], tc.lines)
		})
		err := ours(trusted, marshal(t, c), sum[:], false, identity, issuer)
		if (err == nil) != tc.accept {
			t.Errorf("%d signature lines: %v, want accept=%v", tc.lines, err, tc.accept)
		}
	}
}
