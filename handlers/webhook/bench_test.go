package webhook

import "testing"

// BenchmarkMatch matches one push against 100 catalogs.
func BenchmarkMatch(b *testing.B) {
	m, err := NewMatcher([]HostAlias{{Host: "registry.example.test", Aliases: []string{"mirror.example.test"}}})
	if err != nil {
		b.Fatal(err)
	}
	cats := matchCatalogs(100)
	p := Push{Host: "mirror.example.test", Repository: "acme/cat3", Tag: "v4.13"}
	b.ReportAllocs()
	for b.Loop() {
		if got := m.Match(cats, p); len(got) != 1 {
			b.Fatal(got)
		}
	}
}
