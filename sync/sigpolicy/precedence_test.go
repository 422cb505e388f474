package sigpolicy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestPrecedence: a catalog's own requirement wins, then the longest
// matching prefix (whole path elements); no match needs no signature.
func TestPrecedence(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "k.pub")
	if err := os.WriteFile(pub, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	keys := Requirement{KeyFiles: []string{pub}}
	p, err := New(nil, []Rule{
		{Prefix: "reg.example/acme", Requirement: keys},
		{Prefix: "reg.example/acme/team/", Requirement: keys},
		{Name: "strict", Requirement: keys},
	}, map[string]CatalogRule{"own": {Requirement: keys}, "ref": {Rule: "strict"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ catalog, image, want string }{
		{"c", "reg.example/acme/x", `rule for prefix "reg.example/acme"`},
		{"c", "reg.example/acme", `rule for prefix "reg.example/acme"`},
		{"c", "reg.example/acme/team/x", `rule for prefix "reg.example/acme/team/"`},
		{"c", "reg.example/acmeish/x", ""},
		{"c", "other.example/acme/x", ""},
		{"own", "reg.example/acme/team/x", `catalog "own"`},
		{"own", "other.example/x", `catalog "own"`},
		{"ref", "reg.example/acme/x", `rule "strict"`},
	} {
		got := ""
		if r := p.requirementFor(tc.catalog, tc.image); r != nil {
			got = r.label
		}
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.catalog, tc.image, got, tc.want)
		}
	}
}
