package webhook

import (
	"fmt"
	"slices"
	"testing"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

func TestMatch(t *testing.T) {
	m, err := NewMatcher([]HostAlias{
		{Host: "127.0.0.1:5000", Aliases: []string{"localhost:5000", "Registry.Internal.Example.Test:5000"}},
		{Host: "mirror.example.test", Aliases: []string{"origin.example.test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cats := []catalogspec.Catalog{
		{Name: "tag", Image: catalogspec.ParseImage("127.0.0.1:5000/acme/catalog:v1")},
		{Name: "latest", Image: catalogspec.ParseImage("127.0.0.1:5000/acme/catalog")},
		{Name: "pinned", Image: catalogspec.ParseImage("127.0.0.1:5000/acme/catalog@" + digAMD)},
		{Name: "tag-and-digest", Image: catalogspec.ParseImage("127.0.0.1:5000/acme/catalog:v1@" + digARM)},
		{Name: "mirror", Image: catalogspec.ParseImage("mirror.example.test/acme/catalog:v1")},
		{Name: "hub", Image: catalogspec.ParseImage("acme/catalog:v1")},
		{Name: "hub-official", Image: catalogspec.ParseImage("ubuntu:v1")},
		{Name: "layout", Image: catalogspec.ParseImage("ocidir://acme/catalog:v1")},
		{Name: "broken", Image: catalogspec.ParseImage(" not a ref")},
		{Name: "other", Image: catalogspec.ParseImage("127.0.0.1:5000/acme/other:v1")},
	}
	tests := []struct {
		name string
		push Push
		want []string
	}{
		{"tag push", Push{Host: "127.0.0.1:5000", Repository: "acme/catalog", Tag: "v1", Digest: digIndex}, []string{"tag"}},
		// Without a digest, a tag push may have made a pinned digest available.
		{"alias host", Push{Host: "localhost:5000", Repository: "acme/catalog", Tag: "v1"}, []string{"tag", "pinned", "tag-and-digest"}},
		{"alias in other case", Push{Host: "registry.internal.example.test:5000", Repository: "acme/catalog", Tag: "latest"}, []string{"latest", "pinned", "tag-and-digest"}},
		{"digest push matches tags and its pin", Push{Host: "127.0.0.1:5000", Repository: "acme/catalog", Digest: digAMD}, []string{"tag", "latest", "pinned"}},
		{"other digest", Push{Host: "127.0.0.1:5000", Repository: "acme/catalog", Digest: digIndex}, []string{"tag", "latest"}},
		{"tag and digest reference is pinned", Push{Host: "127.0.0.1:5000", Repository: "acme/catalog", Tag: "v1", Digest: digARM}, []string{"tag", "tag-and-digest"}},
		{"no tag nor digest", Push{Host: "127.0.0.1:5000", Repository: "acme/catalog"}, []string{"tag", "latest", "pinned", "tag-and-digest"}},
		{"catalog pulls from the mirror", Push{Host: "origin.example.test", Repository: "acme/catalog", Tag: "v1"}, []string{"mirror"}},
		{"unaliased host", Push{Host: "127.0.0.2:5000", Repository: "acme/catalog", Tag: "v1"}, nil},
		{"host unknown: any registry", Push{Repository: "acme/catalog", Tag: "v1", Digest: digIndex}, []string{"tag", "mirror", "hub"}},
		{"default registry", Push{Host: defaultRegistry(), Repository: "acme/catalog", Tag: "v1"}, []string{"hub"}},
		{"official image", Push{Host: defaultRegistry(), Repository: "library/ubuntu", Tag: "v1"}, []string{"hub-official"}},
		{"repository prefix is not a match", Push{Host: "127.0.0.1:5000", Repository: "acme", Tag: "v1"}, nil},
	}
	for _, tc := range tests {
		if got := m.Match(cats, tc.push); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Matching reads the references parsed when the catalogs were configured:
// it costs no allocation per catalog, however many there are (parsing one
// costs a dozen).
func TestMatchDoesNotParseReferences(t *testing.T) {
	m, err := NewMatcher([]HostAlias{{Host: "registry.example.test", Aliases: []string{"mirror.example.test"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := Push{Host: "mirror.example.test", Repository: "acme/cat3", Tag: "v4.3"}
	allocs := func(n int) float64 {
		cats := matchCatalogs(n)
		return testing.AllocsPerRun(20, func() {
			if got := m.Match(cats, p); len(got) != 1 {
				t.Fatalf("%d catalogs: matched %v, want one", n, got)
			}
		})
	}
	if few, many := allocs(10), allocs(200); many != few {
		t.Errorf("matching allocates %v times over 10 catalogs, %v over 200: it works per catalog", few, many)
	}
}

// matchCatalogs are n catalogs of ten repositories, each on its own tag.
func matchCatalogs(n int) []catalogspec.Catalog {
	cats := make([]catalogspec.Catalog, n)
	for i := range cats {
		cats[i] = catalogspec.Catalog{Name: fmt.Sprintf("c%d", i), Image: catalogspec.ParseImage(fmt.Sprintf("registry.example.test/acme/cat%d:v4.%d", i%10, i))}
	}
	return cats
}
