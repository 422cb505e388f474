package ui

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestGraphHeadsAndStranded(t *testing.T) {
	bundles := map[string]bundleInfo{"a": {"1.0.0"}, "b": {"1.1.0"}, "c": {"1.2.0"}, "s": {"0.9.0"}, "k": {"0.8.0"}, "r": {"1.1.5"}}
	dep := newDeprecations()
	dep.bundles["a"] = "old"
	href := func(b string) string { return "/ui/x/" + b }
	// c replaces b replaces a, c skips k; s is in c's skipRange only, so
	// no replaces or skips reaches it: stranded. "gone" is named but not
	// an entry.
	ch := fbcChannel{Package: "p", Name: "stable", Entries: []fbcEntry{
		{Name: "a", Replaces: "gone"}, {Name: "b", Replaces: "a"}, {Name: "s"},
		{Name: "k"}, {Name: "c", Replaces: "b", Skips: []string{"k"}, SkipRange: "<1.0.0"},
	}}
	g := buildGraph(ch, bundles, dep, href)
	if !slices.Equal(g.Heads, []string{"s", "c"}) {
		t.Fatalf("heads %v", g.Heads)
	}
	// Two heads: nothing is called stranded, the page warns instead.
	if len(g.Stranded) != 0 {
		t.Errorf("stranded %v with two heads", g.Stranded)
	}
	ch.Entries[2].Replaces = "" // s
	ch.Entries = append(ch.Entries[:2:2], append([]fbcEntry{{Name: "s"}}, ch.Entries[3:]...)...)
	ch.Entries[4].Skips = []string{"k", "s"}
	g = buildGraph(ch, bundles, dep, href)
	if !slices.Equal(g.Heads, []string{"c"}) || len(g.Stranded) != 0 {
		t.Fatalf("heads %v stranded %v", g.Heads, g.Stranded)
	}
	// r is an entry nobody upgrades to and that upgrades nothing, and a
	// second entry replacing nothing on the chain: stranded once c is the
	// only head.
	ch.Entries = append(ch.Entries, fbcEntry{Name: "r"})
	ch.Entries[4].Skips = append(ch.Entries[4].Skips, "r")
	ch.Entries = append(ch.Entries, fbcEntry{Name: "z"})
	bundles["z"] = bundleInfo{"0.1.0"}
	ch.Entries[4].Skips = append(ch.Entries[4].Skips, "q")
	g = buildGraph(ch, bundles, dep, href)
	if !slices.Equal(g.Heads, []string{"c", "z"}) {
		t.Fatalf("heads %v", g.Heads)
	}
	// Nodes: 7 entries and the two names referred to only.
	if len(g.Nodes) != 9 {
		t.Errorf("%d nodes", len(g.Nodes))
	}
	kinds := map[string]int{}
	for _, e := range g.Edges {
		kinds[e.Kind]++
	}
	// replaces: a<-gone, b<-a, c<-b; skips k, s, r, q; skipRange <1.0.0
	// from s (0.9.0), k (0.8.0) and z (0.1.0).
	if kinds[edgeReplaces] != 3 || kinds[edgeSkips] != 4 || kinds[edgeSkipRange] != 3 {
		t.Errorf("edges %v", kinds)
	}
	for _, n := range g.Nodes {
		if n.Name == "a" && n.Deprecated != "old" || n.Name == "gone" && (!n.Missing || n.Href != "") || n.Name == "b" && n.Href != "/ui/x/b" {
			t.Errorf("node %+v", n)
		}
	}
}

// A channel of one entry has no edge: its data says [] (the page's
// script iterates it), not null.
func TestGraphOfOneEntryListsNoEdge(t *testing.T) {
	g := buildGraph(fbcChannel{Name: "alpha", Entries: []fbcEntry{{Name: "a"}}}, map[string]bundleInfo{"a": {"1.0.0"}},
		newDeprecations(), func(string) string { return "" })
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"edges":[]`) || !strings.Contains(string(b), `"heads":["a"]`) {
		t.Errorf("graph %s", b)
	}
	g = buildGraph(fbcChannel{Name: "empty"}, nil, newDeprecations(), func(string) string { return "" })
	if b, _ := json.Marshal(g); !strings.Contains(string(b), `"nodes":[],"edges":[],"heads":[]`) {
		t.Errorf("empty channel %s", b)
	}
}

func TestGraphStranded(t *testing.T) {
	bundles := map[string]bundleInfo{"a": {"1.0.0"}, "b": {"1.1.0"}, "c": {"1.2.0"}, "x": {"1.1.5"}}
	// x replaces a, and c replaces b: x is upgraded by nobody... make c
	// skip x so c is the one head, yet x's own chain (x -> a) is off c's.
	ch := fbcChannel{Name: "s", Entries: []fbcEntry{{Name: "a"}, {Name: "b", Replaces: "a"}, {Name: "x", Replaces: "a"}, {Name: "c", Replaces: "b"}}}
	g := buildGraph(ch, bundles, newDeprecations(), func(string) string { return "" })
	if !slices.Equal(g.Heads, []string{"x", "c"}) {
		t.Fatalf("heads %v", g.Heads)
	}
	ch.Entries = append(ch.Entries, fbcEntry{Name: "d", Replaces: "c", Skips: []string{"x"}})
	bundles["d"] = bundleInfo{"1.3.0"}
	ch.Entries[2] = fbcEntry{Name: "x"} // replaces nothing, skipped by d: reached
	ch.Entries = append(ch.Entries, fbcEntry{Name: "y", Replaces: "x"})
	bundles["y"] = bundleInfo{"1.1.6"}
	ch.Entries[4].Skips = append(ch.Entries[4].Skips, "y")
	// y replaces x and is skipped by d: reached. Now an orphan: o replaced
	// by p, p skipped by nobody but replaced by d? no: p is skipped by d,
	// so o (replaced by p, off the chain) is stranded.
	ch.Entries = append(ch.Entries, fbcEntry{Name: "o"}, fbcEntry{Name: "p", Replaces: "o"})
	ch.Entries[4].Skips = append(ch.Entries[4].Skips, "p")
	g = buildGraph(ch, bundles, newDeprecations(), func(string) string { return "" })
	if !slices.Equal(g.Heads, []string{"d"}) || !slices.Equal(g.Stranded, []string{"o"}) {
		t.Fatalf("heads %v stranded %v", g.Heads, g.Stranded)
	}
}

func TestDiff(t *testing.T) {
	k := func(s, p, n string) objKey { return objKey{s, p, n} }
	old := map[objKey]uint64{
		k("olm.package", "a", "a"): 1, k("olm.channel", "a", "stable"): 2, k("olm.bundle", "a", "a.v1"): 3,
		k("olm.package", "gone", "gone"): 4, k("olm.bundle", "gone", "gone.v1"): 5,
		k("olm.package", "same", "same"): 6, k("olm.bundle", "same", "same.v1"): 7,
	}
	cur := map[objKey]uint64{
		k("olm.package", "a", "a"): 1, k("olm.channel", "a", "stable"): 20, k("olm.bundle", "a", "a.v1"): 3, k("olm.bundle", "a", "a.v2"): 8,
		k("olm.package", "new", "new"):   9,
		k("olm.package", "same", "same"): 6, k("olm.bundle", "same", "same.v1"): 7,
	}
	pk, ch, bu := diff(old, cur)
	names := func(l []item) (out []string) {
		for _, it := range l {
			out = append(out, it.Package+"/"+it.Name)
		}
		return out
	}
	for _, c := range []struct {
		got  []item
		want []string
	}{
		{pk.Added, []string{"new/new"}}, {pk.Removed, []string{"gone/gone"}}, {pk.Changed, []string{"a/a"}},
		{ch.Changed, []string{"a/stable"}}, {bu.Added, []string{"a/a.v2"}}, {bu.Removed, []string{"gone/gone.v1"}},
	} {
		if !slices.Equal(names(c.got), c.want) {
			t.Errorf("got %v, want %v", names(c.got), c.want)
		}
	}
	if len(ch.Added)+len(ch.Removed)+len(bu.Changed) != 0 {
		t.Errorf("channels %+v bundles %+v", ch, bu)
	}
}

func TestCSVSummary(t *testing.T) {
	line := []byte(`{"name":"x","properties":[{"type":"olm.csv.metadata","value":{"annotations":{"alm-examples":"[{\"displayName\":\"no\"}]"},` +
		`"crdDescriptions":{"owned":[{"displayName":"nested","name":"a"}]},"description":"the \"real\" one","displayName":"Shown","keywords":["k"]}},{"type":"olm.package","value":{}}]}`)
	m, ok := csvSummary(line)
	if !ok || m.DisplayName != "Shown" || m.Description != `the "real" one` {
		t.Errorf("%+v %v", m, ok)
	}
	if _, ok := csvSummary([]byte(`{"properties":[]}`)); ok {
		t.Error("summary of a bundle without CSV metadata")
	}
	if m, ok := csvSummary([]byte(`{"properties":[{"type":"olm.csv.metadata","value":{"description":`)); ok {
		t.Errorf("truncated: %+v", m)
	}
}

// An entry the head's chain skips and later replaces is on the chain:
// what it replaces is reached, not stranded. So is an entry skipped by
// an entry off the chain (operator-registry's rule).
func TestGraphChainPastASkippedEntry(t *testing.T) {
	bundles := map[string]bundleInfo{"a": {"1.0.0"}, "b": {"1.1.0"}, "c": {"1.2.0"}, "d": {"1.3.0"}}
	ch := fbcChannel{Name: "s", Entries: []fbcEntry{{Name: "a"}, {Name: "b", Replaces: "a"}, {Name: "c", Replaces: "b"},
		{Name: "d", Replaces: "c", Skips: []string{"b"}}}}
	g := buildGraph(ch, bundles, newDeprecations(), func(string) string { return "" })
	if !slices.Equal(g.Heads, []string{"d"}) || len(g.Stranded) != 0 {
		t.Fatalf("heads %v stranded %v", g.Heads, g.Stranded)
	}
	// d skips c, c skips b, b replaces a: only d is on the chain.
	ch = fbcChannel{Name: "s", Entries: []fbcEntry{{Name: "a"}, {Name: "b", Replaces: "a"}, {Name: "c", Skips: []string{"b"}},
		{Name: "d", Skips: []string{"c"}}}}
	g = buildGraph(ch, bundles, newDeprecations(), func(string) string { return "" })
	if !slices.Equal(g.Heads, []string{"d"}) || !slices.Equal(g.Stranded, []string{"a"}) {
		t.Fatalf("heads %v stranded %v", g.Heads, g.Stranded)
	}
}
