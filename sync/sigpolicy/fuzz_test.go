package sigpolicy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/internal/sigverify"
	"github.com/catalogsync/catalogsync/sync/source"
)

// FuzzBundle feeds a referrer manifest and a bundle to what reads them:
// the bundle layer's pick, the bundle's parse within its bounds, the
// digests it names, and verification against a key no input was signed
// with. Nothing may panic, the bounds hold for whatever parses, and
// nothing verifies. The seed corpus (testdata/fuzz/FuzzBundle) holds a
// keyless DSSE bundle and a key-based message-signature bundle as the
// tests make them, and one whose certificate chain is over the bound.
func FuzzBundle(f *testing.F) {
	f.Add([]byte(`{}`), []byte(`{"subject":{"digest":"sha256:00"},"layers":[{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","size":1}]}`))
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	pub := filepath.Join(f.TempDir(), "k.pub")
	if err := os.WriteFile(pub, pemBytes, 0o644); err != nil {
		f.Fatal(err)
	}
	req, err := load("fuzz", Requirement{KeyFiles: []string{pub}})
	if err != nil {
		f.Fatal(err)
	}
	const digest = "sha256:9b231f060651321af809000b5491680c0517bf1fb56a7dbf589e856ce6d1321c"
	f.Fuzz(func(t *testing.T, raw, manifest []byte) {
		if l, ok := source.BundleLayer(manifest, digest); ok {
			var m struct {
				Subject struct{ Digest string } `json:"subject"`
			}
			if json.Unmarshal(manifest, &m) != nil || m.Subject.Digest != digest || l.MediaType != source.SigstoreBundleType || l.Size <= 0 {
				t.Fatalf("picked layer %+v of %q", l, manifest)
			}
		}
		b, err := parseBundle(raw)
		if err == nil {
			if len(b.Certs()) > sigverify.MaxChain || len(b.VerificationMaterial.TlogEntries) > sigverify.MaxTlog || len(b.Timestamps()) > sigverify.MaxTimestamps {
				t.Fatal("a bundle over the bounds parsed")
			}
			for _, d := range b.SignedDigests() {
				if !strings.HasPrefix(d, "sha256:") {
					t.Fatalf("signed digest %q", d)
				}
			}
		}
		if by, err := req.verifyBundle(raw, digest); err == nil {
			t.Fatalf("verified by %s", by)
		}
	})
}
