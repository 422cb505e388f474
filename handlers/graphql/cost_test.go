package graphql_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestWorstCaseBoundsAnswer: for every query the server answers, the
// answer is no larger than the cost model's worst case, on real catalogs:
// the test queries, and pages of bundles with every field at every
// offset (so the largest bundles are among them), aliased and repeated.
func TestWorstCaseBoundsAnswer(t *testing.T) {
	sets := []string{"community-v4.21-3pkgs", "community-v4.21"}
	if testing.Short() {
		sets = sets[:1]
	}
	for _, set := range sets {
		t.Run(set, func(t *testing.T) {
			store := newStore(t)
			syncDir(t, store, "cat", fbcDir(t, set))
			r, g := router(store)
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)
			var qs []string
			for _, q := range queries(t) {
				qs = append(qs, q)
			}
			slices.Sort(qs)
			for off := 0; off < 8000; off += 100 {
				qs = append(qs, fmt.Sprintf(`{ olmbundles(offset: %d) { name package image schema properties { type value } relatedImages { name image } } }`, off))
			}
			qs = append(qs,
				`{ a: olmbundles(limit: 7) { x: properties { value } y: properties { value type } n: name } b: olmchannels { entries { name } } }`,
				`{ s: summary { schemas { name } } t: __type(name: "OlmBundle") { name fields { name } } }`,
				`{ olmpackages { icon { base64data mediatype } description } }`,
			)
			var worst float64
			for _, q := range qs {
				est, err := g.Estimate(context.Background(), "cat", q)
				if err != nil {
					continue // refused before it runs
				}
				a := post(t, srv.URL, "cat", queryBody(q))
				if a.code == 200 && int64(len(a.body)) > est {
					t.Errorf("answer of %d bytes, worst case %d: %.200s", len(a.body), est, q)
				}
				worst = max(worst, float64(len(a.body))/float64(est))
			}
			t.Logf("%d queries; largest answer/worst case %.2f", len(qs), worst)
		})
	}
}
