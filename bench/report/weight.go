package main

import "fmt"

const (
	weightBench       = "BenchmarkWeight"
	weightReaderBench = "BenchmarkWeightReader"
)

// target is a bound a figure must stay within: a value of its own
// unit, or a ratio to a peer's figure when peer is set.
type target struct {
	max  float64
	text string
}

// WeightTable holds the handler's weight to its targets, from this run:
// the release binaries (BenchmarkWeight, BenchmarkWeightReader), exec to
// the first metas answer and a one-shot sync's peak RSS beside
// catalogd's, and full syncs over their store floors. Serving from zero
// is catalogsync-reader's job: `serve`'s own start is shown beside it.
func (r *Report) WeightTable() string {
	var rows [][]string
	for _, w := range []struct{ suffix, bench, idle string }{
		{"", weightBench, "idle `serve` RSS"}, {" (catalogsync-reader)", weightReaderBench, "idle RSS"},
	} {
		rows = append(rows,
			r.ownTarget("binary, stripped"+w.suffix, "", w.bench, "binary-MB", target{60, "≤ 60 MB"}),
			r.ownTarget("packages linked"+w.suffix, "", w.bench, "packages", target{800, "≤ 800"}),
			r.ownTarget("initialisation allocations"+w.suffix, "", w.bench, "init-bytes", target{2e6, "≤ 2 MB"}),
			r.ownTarget("initialisation time"+w.suffix, "", w.bench, "init-ms", target{5, "≤ 5 ms"}),
			r.ownTarget(w.idle+w.suffix, "", w.bench, "idle-RSS-MiB", target{30, "≤ 30 MiB"}))
	}
	rows = append(rows, r.ownTarget("exec → first `/metas` answer", "tiny", coldBench+"tiny/fs", "cold-start-ms", target{20, "≤ 20 ms"}))
	for _, c := range peerCatalogs {
		rows = append(rows, r.peerTarget("exec → first `/metas` answer (catalogsync-reader)", c, coldBench+c+"/fs-reader", peerColdBench+c+"/catalogd",
			"cold-start-ms", target{0.5, "≤ 0.5× catalogd"}))
	}
	for _, c := range peerCatalogs {
		rows = append(rows, r.peerTarget("exec → first `/metas` answer (`serve`)", c, coldBench+c+"/fs", peerColdBench+c+"/catalogd",
			"cold-start-ms", target{}))
	}
	for _, c := range peerCatalogs {
		rows = append(rows, r.peerTarget("one-shot sync VmHWM", c, syncBench+c+"/fs", peerIngestBench+c+"/catalogd-store",
			rssUnit, target{1, "≤ 1× catalogd"}))
	}
	floor := syncTargets["generated-x16"].fullStoreFloor
	for _, st := range stores {
		rows = append(rows, r.ownTarget("full sync ÷ its store floor ("+st.name+")", "generated-x16", syncBench+"generated-x16/"+st.key,
			"x-store-floor", target{floor, fmt.Sprintf("≤ %g×", floor)}))
	}
	return table([]string{"", "catalog", "catalogsync", "catalogd", "÷ catalogd", "target", ""}, rows)
}

// ownTarget is a row of one catalogsync figure against its bound.
func (r *Report) ownTarget(what, catalog, name, unit string, t target) []string {
	v, ok := r.Run.Value(name, unit)
	return []string{what, r.catalogCell(catalog), r.cell(name, unit), "", "", t.text, verdict(v, ok, t)}
}

// peerTarget is a row of a catalogsync figure, the peer's and their
// ratio against its bound.
func (r *Report) peerTarget(what, catalog, ours, peer, unit string, t target) []string {
	a, ok1 := r.Run.Value(ours, unit)
	b, ok2 := r.Run.Value(peer, unit)
	ratio := 0.0
	if ok1 && ok2 && b > 0 {
		ratio = a / b
	}
	return []string{what, r.catalogCell(catalog), r.cell(ours, unit), r.cell(peer, unit), r.ratio(ours, peer, unit),
		t.text, verdict(ratio, ratio > 0 && t.text != "", t)}
}

func (r *Report) catalogCell(catalog string) string {
	if catalog == "" {
		return ""
	}
	return fmt.Sprintf("%s (%s)", catalog, r.size(catalog))
}

func verdict(v float64, ok bool, t target) string {
	switch {
	case !ok:
		return ""
	case v <= t.max:
		return "met"
	}
	return "**not met**"
}
