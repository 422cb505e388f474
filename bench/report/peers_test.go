package main

import (
	"strings"
	"testing"
)

// TestPeerTables: each catalogsync figure is set against the peer's from
// the same output, as a ratio; timeouts of a peer's wrk run are shown.
func TestPeerTables(t *testing.T) {
	out := `pkg: github.com/catalogsync/catalogsync/bench
BenchmarkSync/community-v4.21/fs-2 	3	400000000 ns/op	34.7 MB/s	13.89 catalog-MB	40.00 peak-RSS-MiB
BenchmarkPeerIngest/community-v4.21/catalogd-store-2 	3	1600000000 ns/op	8.7 MB/s	13.89 catalog-MB	50.00 peak-RSS-MiB
BenchmarkMetasWrk/community-v4.21/fs/package/identity-2 	1	10000000000 ns/op	2.000 p99-ms	6000 req/s
BenchmarkPeerMetasWrk/community-v4.21/catalogd/package/identity-2 	1	10000000000 ns/op	20.00 p99-ms	2000 req/s	3.000 timeouts
`
	run, err := Parse(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Run: run}
	ingest := r.PeerIngestTable()
	for _, want := range []string{
		"| community-v4.21 | 13.9 MB | sync (registry → fs) wall | 400 ms | `catalogd-ref store` | 1.60 s | 0.25× |",
		"| sync peak RSS | 40 MiB | `catalogd-ref store` | 50 MiB | 0.80× |",
		"| `catalogsync index` wall | not run |",
	} {
		if !strings.Contains(ingest, want) {
			t.Errorf("ingest table lacks %q:\n%s", want, ingest)
		}
	}
	serve := r.PeerServeTable()
	for _, want := range []string{
		"| `?package=` identity req/s | 6,000 | `catalogd-ref serve` | 2,000 (3 timed out) | 3.00× |",
		"| `?package=` identity p99 | 2.00 ms | `catalogd-ref serve` | 20.0 ms | 0.10× |",
	} {
		if !strings.Contains(serve, want) {
			t.Errorf("serve table lacks %q:\n%s", want, serve)
		}
	}
}
