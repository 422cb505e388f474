package sigverify_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/internal/sigverify"
)

// TestParseRefusesWhatIsOutOfShape: over a bound (size, chain, log
// entries, timestamps), two contents or none, an unknown version or
// field → ErrMalformed, before any verification.
func TestParseRefusesWhatIsOutOfShape(t *testing.T) {
	const msg = `"messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"AA=="},"signature":"AA=="}`
	key := `"verificationMaterial":{"publicKey":{"hint":"k"}}`
	many := func(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	cert := `{"rawBytes":"AA=="}`
	entry := `{"logIndex":"1","logId":{"keyId":"AA=="},"kindVersion":{"kind":"dsse","version":"0.0.1"},"integratedTime":"1","inclusionPromise":{"signedEntryTimestamp":"AA=="},"canonicalizedBody":"AA=="}`
	for _, tc := range []struct{ name, json, want string }{
		{"too large", `{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1",` + key + `,` + msg + `,"x":"` + strings.Repeat("a", sigverify.MaxBundleSize) + `"}`, "larger than"},
		{"long chain", `{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","verificationMaterial":{"x509CertificateChain":{"certificates":[` + many(cert, sigverify.MaxChain+1) + `]}},` + msg + `}`, "chain longer"},
		{"many log entries", `{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","verificationMaterial":{"publicKey":{"hint":"k"},"tlogEntries":[` + many(entry, sigverify.MaxTlog+1) + `]},` + msg + `}`, "log entries"},
		{"many timestamps", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"k"},"timestampVerificationData":{"rfc3161Timestamps":[` + many(`{"signedTimestamp":"AA=="}`, sigverify.MaxTimestamps+1) + `]}},` + msg + `}`, "timestamps"},
		{"two contents", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",` + key + `,` + msg + `,"dsseEnvelope":{"payload":"AA==","payloadType":"x","signatures":[]}}`, "one of them"},
		{"no content", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",` + key + `}`, "one of them"},
		{"unknown version", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.9+json",` + key + `,` + msg + `}`, "media type"},
		{"unknown field", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",` + key + `,` + msg + `,"extra":1}`, "unknown field"},
		{"v0.2 entry without proof", `{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.2","verificationMaterial":{"publicKey":{"hint":"k"},"tlogEntries":[` + entry + `]},` + msg + `}`, "inclusion proof"},
	} {
		_, err := sigverify.Parse([]byte(tc.json))
		if !errors.Is(err, sigverify.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMalformed %q", tc.name, err, tc.want)
		}
	}
	ok := `{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","verificationMaterial":{"publicKey":{"hint":"k"},"tlogEntries":[` + many(entry, sigverify.MaxTlog) + `]},` + msg + `}`
	if _, err := sigverify.Parse(bytes.TrimSpace([]byte(ok))); err != nil {
		t.Fatalf("a bundle at the bounds: %v", err)
	}
}
