package sigpolicy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/regclient/regclient/types/ref"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestPrecedence: a catalog's own requirement wins, then the longest
// matching prefix (whole path elements; for an OCI layout, of its cleaned
// directory); no match needs no signature.
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
		{Prefix: "ocidir:///srv/layouts/", Requirement: keys},
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
		{"c", "ocidir:///srv/layouts/acme:v1", `rule for prefix "ocidir:///srv/layouts/"`},
		{"c", "ocidir:///srv/layouts/team/../acme:v1", `rule for prefix "ocidir:///srv/layouts/"`},
		{"c", "ocidir:///srv/layouts/../acme:v1", ""},
		{"c", "ocidir:///srv/layoutsx/acme:v1", ""},
		{"c", "ocidir://srv/layouts/acme:v1", ""},
		{"own", "ocidir:///anywhere:v1", `catalog "own"`},
	} {
		name := tc.image
		if r, err := ref.New(tc.image); err == nil && r.Scheme == "ocidir" {
			name, _ = imageName(r)
		}
		got := ""
		if r := p.requirementFor(tc.catalog, name); r != nil {
			got = r.label
		}
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.catalog, tc.image, got, tc.want)
		}
	}
}
