package catalogspec_test

import (
	"errors"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/source"
)

func TestParseImageKeepsTheReferenceAsWritten(t *testing.T) {
	const s = "registry.example.test:5000/acme/catalog:v4.16"
	img := catalogspec.ParseImage(s)
	if err := img.Err(); err != nil {
		t.Fatal(err)
	}
	if img.String() != s {
		t.Errorf("String() = %q, want %q", img.String(), s)
	}
	if b, _ := img.MarshalText(); string(b) != s {
		t.Errorf("MarshalText() = %q, want %q", b, s)
	}
	r, ok := img.Ref()
	if !ok || r.Registry != "registry.example.test:5000" || r.Repository != "acme/catalog" || r.Tag != "v4.16" {
		t.Errorf("Ref() = %+v, %v", r, ok)
	}
}

func TestParseImageKeepsAnUnparsableReferenceWithItsError(t *testing.T) {
	for _, s := range []string{"", " registry.example.test/acme/catalog:v1", "registry.example.test/Acme/catalog:v1"} {
		img := catalogspec.ParseImage(s)
		if !errors.Is(img.Err(), source.ErrInvalidRef) {
			t.Errorf("%q: Err() = %v, want ErrInvalidRef", s, img.Err())
		}
		if img.String() != s {
			t.Errorf("%q: String() = %q: the reference as written is lost", s, img.String())
		}
		if _, ok := img.Ref(); ok || img.Registry() != "" || img.Pinned() {
			t.Errorf("%q: an unparsable reference reads as parsed", s)
		}
	}
}

func TestImageRegistryAndPinned(t *testing.T) {
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image    string
		registry string
		pinned   bool
	}{
		{"registry.example.test/acme/catalog:v1", "registry.example.test", false},
		{"registry.example.test/acme/catalog@" + dig, "registry.example.test", true},
		{"registry.example.test/acme/catalog:v1@" + dig, "registry.example.test", true},
		{"ocidir:///srv/layouts/catalog:v1", "", false},
		{"ocidir:///srv/layouts/catalog@" + dig, "", true},
	}
	for _, tc := range tests {
		img := catalogspec.ParseImage(tc.image)
		if img.Registry() != tc.registry || img.Pinned() != tc.pinned {
			t.Errorf("%s: registry %q pinned %v, want %q %v", tc.image, img.Registry(), img.Pinned(), tc.registry, tc.pinned)
		}
	}
}

// Two parses of one reference are equal, whether it parses or not: a
// ClusterCatalog whose spec did not change is not taken for a new one.
func TestImagesOfOneReferenceAreEqual(t *testing.T) {
	for _, s := range []string{"registry.example.test/acme/catalog:v1", "registry.example.test/Acme/catalog:v1"} {
		a, b := catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(s)}, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(s)}
		if a != b {
			t.Errorf("%q: two parses differ", s)
		}
	}
	if catalogspec.ParseImage("registry.example.test/acme/catalog:v1") == catalogspec.ParseImage("registry.example.test/acme/catalog:v2") {
		t.Error("two references are equal")
	}
}
