package main

import "fmt"

const (
	peerIngestBench = "BenchmarkPeerIngest/"
	peerColdBench   = "BenchmarkPeerColdStart/"
	peerWrkBench    = "BenchmarkPeerMetasWrk/"
)

// peerCatalogs are the sizes the peers are measured on (bench's
// peerCatalogs).
var peerCatalogs = []string{"community-v4.21", "generated-x16"}

// peerRow is one comparison: a catalogsync figure and the peer's, both
// from this run, and their ratio.
func (r *Report) peerRow(what, ours, peerWhat, peer, unit string) []string {
	row := []string{what, r.cell(ours, unit), peerWhat, r.cell(peer, unit)}
	if n, ok := r.Run.Value(peer, "timeouts"); ok && n > 0 && unit == "req/s" {
		// Requests that outlasted wrk's timeout are not in req/s.
		row[3] += fmt.Sprintf(" (%d timed out)", int(n))
	}
	return append(row, r.ratio(ours, peer, unit))
}

// PeerIngestTable compares catalogsync's ingest with the peers': wall time
// and peak RSS, catalogsync ÷ peer (below 1 is better).
func (r *Report) PeerIngestTable() string {
	var rows [][]string
	for _, c := range peerCatalogs {
		sync := syncBench + c + "/fs"
		index := peerIngestBench + c + "/catalogsync-index"
		peer := func(tool string) string { return peerIngestBench + c + "/" + tool }
		for _, p := range [][]string{
			r.peerRow("sync (registry → fs) wall", sync, "`catalogd-ref store`", peer("catalogd-store"), "ns/op"),
			r.peerRow("sync (registry → fs) wall", sync, "`opm serve --cache-only`", peer("opm-serve-cache"), "ns/op"),
			r.peerRow("`catalogsync index` wall", index, "`opm serve --cache-only`", peer("opm-serve-cache"), "ns/op"),
			r.peerRow("`catalogsync index` wall", index, "`opm validate`", peer("opm-validate"), "ns/op"),
			r.peerRow("`catalogsync index` wall", index, "`catalogd-ref store`", peer("catalogd-store"), "ns/op"),
			r.peerRow("sync peak RSS", sync, "`catalogd-ref store`", peer("catalogd-store"), "peak-RSS-MiB"),
			r.peerRow("sync peak RSS", sync, "`opm serve --cache-only`", peer("opm-serve-cache"), "peak-RSS-MiB"),
			r.peerRow("`catalogsync index` peak RSS", index, "`opm validate`", peer("opm-validate"), "peak-RSS-MiB"),
		} {
			rows = append(rows, append([]string{c, r.size(c)}, p...))
		}
	}
	return table([]string{"catalog", "size", "catalogsync", "figure", "peer", "figure", "catalogsync ÷ peer"}, rows)
}

// PeerServeTable compares serving with catalogd-ref serve: cold start to
// the first metas answer (÷, below 1 is better), metas req/s (÷, above 1
// is better) and p99 (÷, below 1 is better), under the same wrk load.
func (r *Report) PeerServeTable() string {
	var rows [][]string
	for _, c := range peerCatalogs {
		rows = append(rows, append([]string{c, r.size(c)},
			r.peerRow("cold start", coldBench+c+"/fs", "`catalogd-ref serve`", peerColdBench+c+"/catalogd", "cold-start-ms")...))
		for _, q := range []string{"package", "schema"} {
			for _, enc := range []string{"identity", "gzip"} {
				ours := fmt.Sprintf("%s%s/fs/%s/%s", wrkBench, c, q, enc)
				peer := fmt.Sprintf("%s%s/catalogd/%s/%s", peerWrkBench, c, q, enc)
				what := fmt.Sprintf("`?%s=` %s", q, enc)
				rows = append(rows, append([]string{c, r.size(c)}, r.peerRow(what+" req/s", ours, "`catalogd-ref serve`", peer, "req/s")...))
				rows = append(rows, append([]string{c, r.size(c)}, r.peerRow(what+" p99", ours, "`catalogd-ref serve`", peer, "p99-ms")...))
			}
		}
	}
	return table([]string{"catalog", "size", "catalogsync (fs)", "figure", "peer", "figure", "catalogsync ÷ peer"}, rows)
}
