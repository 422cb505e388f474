package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
)

// The GraphQL shape stored at Commit reads back equal to the one
// rediscovered from the lines; meta without one is ErrNoGraphQL, and a
// stored shape missing or of another size than meta says is ErrCorrupt.
// Catches each check of GraphQLShape and DiscoverGraphQL inverted or
// moved by one, and the shape's key computed wrongly.
func TestGraphQLShapeStoredAndDiscovered(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var objs []obj
	for seed := uint64(1); len(objs) < 30; seed++ {
		objs = genCatalog(rand.New(rand.NewPCG(seed, 7)), 6)
	}
	d := digestOf("gql")
	writeCatalog(t, s, "g", d, objs)
	publish(t, s, "g", d, gcBase)
	c, err := Open(ctx, s, "g")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := c.GraphQLShape(ctx)
	if err != nil {
		t.Fatalf("GraphQLShape: %v", err)
	}
	found, err := c.DiscoverGraphQL(ctx)
	if err != nil {
		t.Fatalf("DiscoverGraphQL: %v", err)
	}
	a, _ := stored.Marshal()
	b, _ := found.Marshal()
	if !bytes.Equal(a, b) || len(a) < 10 {
		t.Fatalf("stored shape %s, discovered %s", a, b)
	}
	size := c.Meta.GraphQLSize
	for _, tc := range []struct {
		size int64
		want error
	}{{0, ErrNoGraphQL}, {-1, ErrNoGraphQL}, {size - 1, ErrCorrupt}, {size + 1, ErrCorrupt}} {
		c.Meta.GraphQLSize = tc.size
		if _, err := c.GraphQLShape(ctx); !errors.Is(err, tc.want) {
			t.Errorf("GraphQLSize %d of %d: %v, want %v", tc.size, size, err, tc.want)
		}
	}
	c.Meta.GraphQLSize = size
	if err := s.Delete(ctx, contentPrefix("g", d)+graphqlFile); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GraphQLShape(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("shape deleted: %v, want ErrCorrupt", err)
	}
	// Lines longer than the reader's first buffer are observed whole.
	big := []obj{{"olm.bundle", "p", "big", []byte(`{"schema":"olm.bundle","pad":"` + strings.Repeat("x", 70<<10) + `","late":1}` + "\n")}}
	writeCatalog(t, s, "big", d, big)
	publish(t, s, "big", d, gcBase)
	if c, err = Open(ctx, s, "big"); err != nil {
		t.Fatal(err)
	}
	found, err = c.DiscoverGraphQL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ = c.GraphQLShape(ctx)
	a, _ = stored.Marshal()
	b, _ = found.Marshal()
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte("late")) {
		t.Fatalf("long line: stored %s, discovered %s", a, b)
	}
}

// Lines pages through the matches of a query in catalog order: offset
// skips, limit bounds (MaxLines at most, 0 none, negatives as 0), and
// matches far apart are read separately. Catches the paging, candidate
// and grouping checks of Lines, page and candidates inverted or moved.
func TestLinesPaging(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var objs []obj
	for seed := uint64(1); len(objs) < 60; seed++ { // a catalog of some size
		objs = genCatalog(rand.New(rand.NewPCG(seed, 9)), 12)
	}
	// Far-apart matches: a big object between two "far" ones.
	objs = append(objs,
		obj{"far", "fp", "f1", []byte(`{"f":1}` + "\n")},
		obj{"pad", "", "", []byte(`{"pad":"` + strings.Repeat("y", 80<<10) + `"}` + "\n")},
		obj{"far", "fp", "f2", []byte(`{"f":2}` + "\n")})
	d := digestOf("lines")
	writeCatalog(t, s, "ln", d, objs)
	publish(t, s, "ln", d, gcBase)
	c, err := Open(ctx, s, "ln")
	if err != nil {
		t.Fatal(err)
	}
	want := func(q Query, off, limit int) [][]byte {
		var out [][]byte
		for _, o := range objs {
			if o.matches(q) {
				out = append(out, o.line)
			}
		}
		off = min(max(off, 0), len(out))
		out = out[off:]
		return out[:min(len(out), max(limit, 0), MaxLines)]
	}
	queries := []Query{{}, {Schema: "olm.bundle"}, {Package: "pkg-1"}, {Name: "n1"}, {Schema: "olm.channel", Name: "n2"},
		{Schema: "olm.bundle", Package: "pkg-2", Name: "n3"}, {Schema: "far"}, {Package: "fp", Name: "f2"}, {Name: "nothing"},
		{Name: "n0-"}, {Package: "pkg-0-"}, {Schema: "olm.bundla"}} // unknown, each sorting just before a known one
	for _, sc := range []string{"", "olm.bundle", "olm.channel", "custom.thing"} {
		for _, pk := range []string{"", "pkg-1", "pkg-2"} {
			for _, nm := range []string{"", "n1", "n4"} {
				queries = append(queries, Query{Schema: sc, Package: pk, Name: nm})
			}
		}
	}
	for _, q := range queries {
		for _, pg := range [][2]int{{0, 1000}, {0, 1}, {1, 2}, {2, 1000}, {-1, 3}, {0, 0}, {0, -1}, {1 << 20, 5}} {
			got, err := c.Lines(ctx, q, pg[0], pg[1])
			if err != nil {
				t.Fatal(err)
			}
			if w := want(q, pg[0], pg[1]); len(got) != len(w) || len(w) > 0 && !bytes.Equal(bytes.Join(got, nil), bytes.Join(w, nil)) {
				t.Errorf("%+v offset %d limit %d: %d lines, want %d", q, pg[0], pg[1], len(got), len(w))
			}
		}
	}
	many := make([]obj, MaxLines+5)
	for i := range many {
		many[i] = obj{"olm.bundle", "p", fmt.Sprint("b", i), fmt.Appendf(nil, `{"i":%d}`+"\n", i)}
	}
	writeCatalog(t, s, "many", d, many)
	publish(t, s, "many", d, gcBase)
	if c, err = Open(ctx, s, "many"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Lines(ctx, Query{Package: "p"}, 3, MaxLines+5); err != nil || len(got) != MaxLines || !bytes.Equal(got[0], many[3].line) {
		t.Fatalf("over MaxLines: %d lines, %v", len(got), err)
	}
}

// getCounter counts the ranged Gets of keys ending in catalog.jsonl.
type getCounter struct {
	storage.Store
	mu   sync.Mutex
	gets int
}

func (g *getCounter) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if strings.HasSuffix(key, "/"+contentFile) {
		g.mu.Lock()
		g.gets++
		g.mu.Unlock()
	}
	return g.Store.Get(ctx, key, off, n)
}

// Lines reads matches at most 64 KB apart with one Get (a round trip on
// object storage), long adjacent lines included, and farther ones apart.
// Catches the gap between matches computed wrongly or compared with < or
// > instead of <=.
func TestLinesGroupsCloseMatches(t *testing.T) {
	ctx := context.Background()
	line := func(fill string, n int) []byte { // n bytes with the newline
		return []byte(`{"p":"` + strings.Repeat(fill, n-9) + `"}` + "\n")
	}
	const gap = 64 << 10
	for _, tc := range []struct {
		pad  int
		gets int
	}{{gap, 1}, {gap + 1, 2}} {
		s := newStore(t)
		objs := []obj{{"a", "", "a1", line("x", 40<<10)}, {"a", "", "a2", line("x", 40<<10)},
			{"pad", "", "", line("y", tc.pad)}, {"a", "", "a3", line("z", 20)}}
		writeCatalog(t, s, "gap", digestOf("gap"), objs)
		publish(t, s, "gap", digestOf("gap"), gcBase)
		gc := &getCounter{Store: s}
		c, err := Open(ctx, gc, "gap")
		if err != nil {
			t.Fatal(err)
		}
		gc.gets = 0
		got, err := c.Lines(ctx, Query{Schema: "a"}, 0, 10)
		if err != nil || len(got) != 3 || !bytes.Equal(got[2], objs[3].line) || !bytes.Equal(got[1], objs[1].line) {
			t.Fatalf("gap %d: %d lines, %v", tc.pad, len(got), err)
		}
		if gc.gets != tc.gets {
			t.Errorf("matches %d bytes apart: %d Gets, want %d", tc.pad, gc.gets, tc.gets)
		}
	}
}
