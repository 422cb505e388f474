package graphql_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSameAsCatalogd sends every query of testdata/queries.graphql (the
// constructs of catalogd's sample queries and tests, its limits and its
// errors) to catalogsync and to catalogd's own handler over the same
// catalog, and wants the same status and the same JSON.
func TestSameAsCatalogd(t *testing.T) {
	sets := []string{"tiny", "community-v4.21-3pkgs", "community-v4.21"}
	if testing.Short() {
		sets = sets[:2]
	}
	for _, set := range sets {
		t.Run(set, func(t *testing.T) {
			dir := fbcDir(t, set)
			ref := catalogdRef(t, "cat", dir)
			store := newStore(t)
			syncDir(t, store, "cat", dir)
			compareAll(t, ours(t, store).URL, ref)
		})
	}
}

// TestSameAsCatalogdLargest is the 220 MB catalog (16 renamed copies of
// community-v4.21), set CATALOGSYNC_GRAPHQL_LARGE=1 to run it.
func TestSameAsCatalogdLargest(t *testing.T) {
	if os.Getenv("CATALOGSYNC_GRAPHQL_LARGE") == "" {
		t.Skip("set CATALOGSYNC_GRAPHQL_LARGE=1 to compare on the 220 MB catalog")
	}
	dir := scaledCatalog(t, fbcDir(t, "community-v4.21"), 16)
	ref := catalogdRef(t, "cat", dir)
	store := newStore(t)
	syncDir(t, store, "cat", dir)
	compareAll(t, ours(t, store).URL, ref)
}

func compareAll(t *testing.T, ourBase, refBase string) {
	qs := queries(t)
	names := make([]string, 0, len(qs))
	for n := range qs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			body := queryBody(qs[n])
			got, want := post(t, ourBase, "cat", body), post(t, refBase, "cat", body)
			compareAnswers(t, got, want)
		})
	}
	// Requests refused before a query runs.
	for _, tc := range []struct{ name, catalog, body string }{
		{"empty-query", "cat", `{"query": ""}`},
		{"no-query", "cat", `{}`},
		{"not-json", "cat", `query { summary }`},
		{"query-too-large", "cat", queryBody("{ summary { totalSchemas } }" + strings.Repeat(" ", 100000))},
		{"body-too-large", "cat", `{"query": "` + strings.Repeat("x", 1<<20) + `"}`},
		{"unknown-catalog", "nosuch", queryBody("{ summary { totalSchemas } }")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := post(t, ourBase, tc.catalog, tc.body), post(t, refBase, tc.catalog, tc.body)
			if got.code != want.code || string(got.body) != string(want.body) {
				t.Errorf("got %d %q, catalogd %d %q", got.code, got.body, want.code, want.body)
			}
		})
	}
}

func compareAnswers(t *testing.T, got, want answer) {
	t.Helper()
	if got.code != want.code || got.ctype != want.ctype {
		t.Fatalf("got %d %s, catalogd %d %s\nours: %.300s\ncatalogd: %.300s", got.code, got.ctype, want.code, want.ctype, got.body, want.body)
	}
	if want.code != 200 {
		if string(got.body) != string(want.body) {
			t.Errorf("body %q, catalogd %q", got.body, want.body)
		}
		return
	}
	g, w := canonical(t, got.body), canonical(t, want.body)
	if g != w {
		t.Errorf("answers differ\n%s", firstDiff(g, w))
	}
}

// firstDiff shows where two texts start to differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			lo := max(i-3, 0)
			return "ours:\n" + strings.Join(al[lo:min(i+4, len(al))], "\n") + "\ncatalogd:\n" + strings.Join(bl[lo:min(i+4, len(bl))], "\n")
		}
	}
	return "one is a prefix of the other"
}
