package sigverify_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestStatementReadAsProtojsonReadsIt: an in-toto statement naming the
// artifact only in a repeated key, or a key in another case, is read by
// encoding/json as the artifact's and refused by protojson, which
// sigstore-go and in-toto's readers use: it must not verify.
func TestStatementReadAsProtojsonReadsIt(t *testing.T) {
	vs := newVirtual(t)
	artifact := []byte("catalog manifest")
	sum := sha256.Sum256(artifact)
	other := sha256.Sum256([]byte("another manifest"))
	subject := func(key string, d [32]byte) string {
		return `"` + key + `":[{"name":"catalog","digest":{"sha256":"` + hex.EncodeToString(d[:]) + `"}}]`
	}
	head := `{"_type":"https://in-toto.io/Statement/v1",` + subject("subject", other) + `,"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{},`
	trusted := vs.trustedRoot(t, vs, nil)
	for name, st := range map[string]string{
		"subject repeated":       head + subject("subject", sum) + `}`,
		"subject in upper case":  head + subject("Subject", sum) + `}`,
		"digest algorithm twice": strings.Replace(strings.TrimSuffix(head, ","), `"}}]`, `","sha256":"`+hex.EncodeToString(sum[:])+`"}}]`, 1) + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := signing{v: vs, identity: identity, issuer: issuer, artifact: artifact, dsse: true, statement: []byte(st)}
			raw := marshal(t, s.make(t))
			theirs := oracle(trusted, raw, sum[:], false, identity, issuer)
			mine := ours(trusted, raw, sum[:], false, identity, issuer)
			t.Logf("sigstore-go: %v; ours: %v", theirs, mine)
			if theirs == nil || mine == nil {
				t.Fatalf("verified (sigstore-go %v, ours %v)", theirs, mine)
			}
		})
	}
}
