package ui

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// Edge kinds, drawn distinctly (solid, dashed, dotted).
const (
	edgeReplaces  = "replaces"
	edgeSkips     = "skips"
	edgeSkipRange = "skipRange"
)

// graphNode is one entry of a channel (or a name an entry refers to that
// the channel does not have: Missing).
type graphNode struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Version    string `json:"version,omitempty"`
	Href       string `json:"href,omitempty"`
	Head       bool   `json:"head,omitempty"`
	Deprecated string `json:"deprecated,omitempty"`
	Stranded   bool   `json:"stranded,omitempty"`
	Missing    bool   `json:"missing,omitempty"`
}

// graphEdge points from the older entry to the one that upgrades it, as
// opm alpha render-graph draws it.
type graphEdge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Kind  string `json:"kind"`
	Range string `json:"range,omitempty"`
}

// channelGraph is one channel's upgrade graph.
type channelGraph struct {
	Package    string      `json:"package"`
	Channel    string      `json:"channel"`
	Deprecated string      `json:"deprecated,omitempty"`
	Nodes      []graphNode `json:"nodes"`
	Edges      []graphEdge `json:"edges"`
	// Heads are the entries nothing replaces or skips: one in a valid
	// channel.
	Heads []string `json:"heads"`
	// Stranded are entries with no upgrade path to a head.
	Stranded []string `json:"stranded,omitempty"`
}

// bundleInfo is what a graph needs of each bundle of the package.
type bundleInfo struct {
	version string
}

// buildGraph builds ch's graph with the edges opm alpha render-graph
// draws: replaces and skips as named, and a skipRange edge from every
// entry of the channel whose bundle version is in the range (a bundle
// missing from the package counts as version 0.0.0, as in opm).
func buildGraph(ch fbcChannel, bundles map[string]bundleInfo, dep *deprecations, href func(bundle string) string) channelGraph {
	// Empty lists, never null: the page's script reads them as arrays.
	g := channelGraph{Package: ch.Package, Channel: ch.Name, Deprecated: dep.channels[ch.Name],
		Nodes: []graphNode{}, Edges: []graphEdge{}, Heads: []string{}}
	ids := map[string]string{}
	node := func(name string) string {
		if id, ok := ids[name]; ok {
			return id
		}
		id := fmt.Sprintf("n%d", len(g.Nodes))
		ids[name] = id
		n := graphNode{ID: id, Name: name, Missing: true}
		if b, ok := bundles[name]; ok {
			n.Version, n.Href = b.version, href(name)
		}
		n.Deprecated = dep.bundles[name]
		g.Nodes = append(g.Nodes, n)
		return id
	}
	versions := make([]semver.Version, len(ch.Entries))
	for i, e := range ch.Entries {
		k, _ := strconv.Atoi(node(e.Name)[1:])
		g.Nodes[k].Missing = false
		if v, ok := parseVersion(bundles[e.Name].version); ok {
			versions[i] = v
		}
	}
	for _, e := range ch.Entries {
		to := ids[e.Name]
		if e.Replaces != "" {
			g.Edges = append(g.Edges, graphEdge{From: node(e.Replaces), To: to, Kind: edgeReplaces})
		}
		for _, s := range e.Skips {
			g.Edges = append(g.Edges, graphEdge{From: node(s), To: to, Kind: edgeSkips})
		}
		if e.SkipRange == "" {
			continue
		}
		inRange, err := semver.ParseRange(e.SkipRange)
		if err != nil {
			continue // opm warns and draws none
		}
		for i, o := range ch.Entries {
			if inRange(versions[i]) {
				g.Edges = append(g.Edges, graphEdge{From: ids[o.Name], To: to, Kind: edgeSkipRange, Range: e.SkipRange})
			}
		}
	}
	g.markHeads(ch)
	return g
}

// markHeads marks the heads (entries nothing replaces or skips) and, as
// operator-registry's validation does, the stranded entries: with one
// head, those neither on its replaces chain nor skipped by any entry,
// which no upgrade reaches.
func (g *channelGraph) markHeads(ch fbcChannel) {
	upgraded, skipped := map[string]bool{}, map[string]bool{}
	byName := map[string]fbcEntry{}
	for _, e := range ch.Entries {
		byName[e.Name] = e
		if e.Replaces != "" {
			upgraded[e.Replaces] = true
		}
		for _, s := range e.Skips {
			upgraded[s], skipped[s] = true, true
		}
	}
	for _, e := range ch.Entries {
		if !upgraded[e.Name] && !slices.Contains(g.Heads, e.Name) {
			g.Heads = append(g.Heads, e.Name)
		}
	}
	for i := range g.Nodes {
		g.Nodes[i].Head = !g.Nodes[i].Missing && slices.Contains(g.Heads, g.Nodes[i].Name)
	}
	if len(g.Heads) != 1 {
		return // several heads (or a cycle): the page says so
	}
	onChain := map[string]bool{}
	for name := g.Heads[0]; name != "" && !onChain[name]; name = byName[name].Replaces {
		onChain[name] = true
	}
	for i := range g.Nodes {
		if n := &g.Nodes[i]; !n.Missing && !onChain[n.Name] && !skipped[n.Name] {
			n.Stranded = true
			g.Stranded = append(g.Stranded, n.Name)
		}
	}
}

// writeMermaid writes the package's graphs as opm alpha render-graph
// does (channels by name, entries in channel order), so the two can be
// compared line for line.
func writeMermaid(w io.Writer, pkg string, graphs []channelGraph) error {
	var b strings.Builder
	b.WriteString("graph LR\n  classDef deprecated fill:#E8960F\n")
	fmt.Fprintf(&b, "  %%%% package %q\n  subgraph %q\n", pkg, pkg)
	sorted := slices.Clone(graphs)
	slices.SortStableFunc(sorted, func(a, b channelGraph) int { return strings.Compare(a.Channel, b.Channel) })
	for _, g := range sorted {
		cid := pkg + "-" + g.Channel
		fmt.Fprintf(&b, "    %%%% channel %q\n    subgraph %s[%q]\n", g.Channel, cid, g.Channel)
		names := map[string]string{}
		for _, n := range g.Nodes {
			names[n.ID] = n.Name
		}
		ref := func(id string) string { return fmt.Sprintf("%s-%s[%q]", cid, names[id], names[id]) }
		for _, n := range g.Nodes {
			if n.Missing {
				continue
			}
			dep := ""
			if n.Deprecated != "" {
				dep = ":::deprecated"
			}
			fmt.Fprintf(&b, "      %s%s\n", ref(n.ID), dep)
		}
		for _, e := range g.Edges {
			label := map[string]string{edgeReplaces: "replace", edgeSkips: "skip"}[e.Kind]
			if e.Kind == edgeSkipRange {
				label = fmt.Sprintf("%q", "skipRange("+e.Range+")")
			}
			fmt.Fprintf(&b, "      %s-- %s --> %s\n", ref(e.From), label, ref(e.To))
		}
		b.WriteString("    end\n")
	}
	b.WriteString("  end\n")
	_, err := io.WriteString(w, b.String())
	return err
}
