package main

import (
	"strings"
	"testing"
)

// The weight table judges each figure of this run against its target,
// ratios to catalogd's from the same run, and says which are missing.
func TestWeightTableJudgesTargets(t *testing.T) {
	out := `pkg: github.com/catalogsync/catalogsync/bench
BenchmarkWeight-2 	5	31482970 ns/op	34.26 binary-MB	27.30 idle-RSS-MiB	2369288 init-bytes	4.597 init-ms	655.0 packages
BenchmarkWeightReader-2 	5	19000000 ns/op	18.02 binary-MB	12.50 idle-RSS-MiB	337304 init-bytes	1.651 init-ms	330.0 packages
BenchmarkColdStart/community-v4.21/fs-reader-2 	5	7000000 ns/op	13.89 catalog-MB	5.20 cold-start-ms
BenchmarkColdStart/generated-x16/fs-reader-2 	5	7000000 ns/op	222.3 catalog-MB	19.00 cold-start-ms
BenchmarkColdStart/tiny/fs-2 	5	15000000 ns/op	0.0008680 catalog-MB	13.76 cold-start-ms
BenchmarkColdStart/community-v4.21/fs-2 	5	17000000 ns/op	13.89 catalog-MB	16.34 cold-start-ms
BenchmarkPeerColdStart/community-v4.21/catalogd-2 	5	12000000 ns/op	13.89 catalog-MB	11.79 cold-start-ms
BenchmarkColdStart/generated-x16/fs-2 	5	20000000 ns/op	222.3 catalog-MB	18.57 cold-start-ms
BenchmarkPeerColdStart/generated-x16/catalogd-2 	5	40000000 ns/op	222.3 catalog-MB	37.63 cold-start-ms
BenchmarkSync/generated-x16/fs-2 	3	1000000000 ns/op	222.3 catalog-MB	50.00 peak-RSS-MiB	1.250 x-store-floor
BenchmarkPeerIngest/generated-x16/catalogd-store-2 	3	10000000000 ns/op	222.3 catalog-MB	51.20 peak-RSS-MiB
`
	run, err := Parse(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	got := (&Report{Run: run}).WeightTable()
	for _, want := range []string{
		"| binary, stripped |  | 34.3 MB |  |  | ≤ 60 MB | met |",
		"| initialisation allocations |  | 2.37 MB |  |  | ≤ 2 MB | **not met** |",
		"| packages linked (catalogsync-reader) |  | 330 |  |  | ≤ 800 | met |",
		"| idle RSS (catalogsync-reader) |  | 12 MiB |  |  | ≤ 30 MiB | met |",
		"| exec → first `/metas` answer (catalogsync-reader) | community-v4.21 (13.9 MB) | 5.20 ms | 11.8 ms | 0.44× | ≤ 0.5× catalogd | met |",
		"| exec → first `/metas` answer (catalogsync-reader) | generated-x16 (222.3 MB) | 19.0 ms | 37.6 ms | 0.50× | ≤ 0.5× catalogd | **not met** |",
		"| exec → first `/metas` answer (`serve`) | community-v4.21 (13.9 MB) | 16.3 ms | 11.8 ms | 1.39× |  |  |",
		"| one-shot sync VmHWM | generated-x16 (222.3 MB) | 50 MiB | 51 MiB | 0.98× | ≤ 1× catalogd | met |",
		"| full sync ÷ its store floor (fs) | generated-x16 (222.3 MB) | 1.25× |  |  | ≤ 1.3× | met |",
		"| one-shot sync VmHWM | community-v4.21 (13.9 MB) | not run |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("weight table lacks %q:\n%s", want, got)
		}
	}
}
