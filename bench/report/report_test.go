package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func parseSample(t *testing.T) *Run {
	t.Helper()
	f, err := os.Open("testdata/sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := Parse(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestParse(t *testing.T) {
	run := parseSample(t)
	for _, c := range []struct {
		name, unit string
		want       float64
	}{
		{"BenchmarkSync/tiny/fs", "ns/op", 31000000},
		{"BenchmarkSync/tiny/fs", "peak-RSS-MiB", 28.18},
		{"BenchmarkSync/tiny/fs", "peak-anon-MiB", 13.2},
		{"BenchmarkSyncIncremental/generated-x16/s3", "peak-anon-MiB", 52},
		{"BenchmarkSync/generated-x16/s3", "x-floor", 2.866},
		{"BenchmarkSync/generated-x16/fs", "pulling-ms", 1440},
		{"BenchmarkSyncIncremental/generated-x16/fs", "reused-files", 527},
		{"BenchmarkMetasWrk/generated-x16/fs/package/identity", "req/s", 23356},
		{"BenchmarkWebhookStorm", "max-syncs", 2},
		{"BenchmarkStatusLatency/write-watch-floor", "lat-mean-ms", 2},
		{"BenchmarkIndexLoad", "index-bytes", 584232},
		{"BenchmarkOpen", "allocs/op", 114},
	} {
		got, ok := run.Value(c.name, c.unit)
		if !ok || got != c.want {
			t.Errorf("%s %s = %v (found %v), want %v", c.name, c.unit, got, ok, c.want)
		}
	}
	if res := run.Results["BenchmarkSync/tiny/fs"]; res == nil || res.N != 3 || res.Pkg != "github.com/catalogsync/catalogsync/bench" {
		t.Errorf("tiny/fs: %+v", res)
	}
	if got := run.Results["BenchmarkOpen"].Pkg; got != "github.com/catalogsync/catalogsync/storage/catalog" {
		t.Errorf("BenchmarkOpen's package %q", got)
	}
	if _, why := run.Status("BenchmarkSync/community-v4.21/fs"); why != "skipped: needs ../shared/testdata/fbc/community-v4.21 beside the repository: not found" {
		t.Errorf("skip: %q", why)
	}
	if _, why := run.Status("BenchmarkStatusLatency/tiny"); why != "failed: no version with Succeeded and Serving within 2m" {
		t.Errorf("failure: %q", why)
	}
	// Never reached after its parent failed.
	if _, why := run.Status("BenchmarkStatusLatency/community-v4.21"); !strings.HasPrefix(why, "failed: ") {
		t.Errorf("child of a failed benchmark: %q", why)
	}
	if _, why := run.Status("BenchmarkColdStart/tiny/fs"); why != "not run" {
		t.Errorf("absent: %q", why)
	}
	if len(run.PkgFail) != 1 || run.PkgFail[0] != "github.com/catalogsync/catalogsync/bench" {
		t.Errorf("failed packages %v", run.PkgFail)
	}
	if len(run.Skipped) != 3 {
		t.Errorf("skips %v: a BENCH log must not count", run.Skipped)
	}
}

// Without -v, a failure's log follows its --- FAIL line.
func TestParsePlainFailure(t *testing.T) {
	out := "BenchmarkA/x-4 \t 1\t 5 ns/op\n--- FAIL: BenchmarkA/y\n    a_test.go:6: boom\n        line2\n--- FAIL: BenchmarkA\nFAIL\n"
	run, err := Parse(strings.NewReader(out), 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, why := run.Status("BenchmarkA/y"); why != "failed: boom line2" {
		t.Errorf("got %q", why)
	}
	if v, _ := run.Value("BenchmarkA/x", "ns/op"); v != 5 {
		t.Errorf("BenchmarkA/x: %v", v)
	}
}

// A failure's message is its first log entry, shortened: later entries
// (a server's log tail) stay in the raw output.
func TestParseFailureKeepsFirstEntry(t *testing.T) {
	out := "BenchmarkB\n    b_test.go:9: Get /metrics: connection refused\n    servers.go:310: catalogsync log x, last lines:\n        goroutine 1\n--- FAIL: BenchmarkB\n" +
		"BenchmarkC\n    c_test.go:1: " + strings.Repeat("x", 500) + "\n--- FAIL: BenchmarkC\n"
	run, err := Parse(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, why := run.Status("BenchmarkB"); why != "failed: Get /metrics: connection refused" {
		t.Errorf("got %q", why)
	}
	if _, why := run.Status("BenchmarkC"); len([]rune(why)) != len("failed: ")+maxMessage || !strings.HasSuffix(why, "x…") {
		t.Errorf("long message not shortened: %d runes", len([]rune(why)))
	}
}

func TestParseRejectsBrokenLine(t *testing.T) {
	if _, err := Parse(strings.NewReader("BenchmarkA-2 \t 1\t 5 ns/op 7\n"), 2); err == nil {
		t.Fatal("a result line with a value and no unit parsed")
	}
}

func TestRender(t *testing.T) {
	f, err := os.Open("testdata/sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info := t.TempDir() + "/info"
	os.WriteFile(info, []byte("command: bench/run.sh\ndate: 2026-11-29 18:00 UTC\ngo: go1.26.8\nquiet-wait: gave up after 600 s (load 3.10)\nload-start: 3.10 2.00 1.50\nload-end: 0.20 0.30 0.40\nelapsed: 612\nstep: go test -bench Sync ./bench\nstep: go test -bench . ./storage/catalog\n"), 0o644)
	var out, detail bytes.Buffer
	if err := render(f, &out, &detail, info, 2, Machine{CPU: "AMD EPYC 7B13", Cores: 2, Threads: 2, MemBytes: 24 << 30, Kernel: "Linux 6.1"}); err != nil {
		t.Fatal(err)
	}
	doc := out.String() + detail.String()
	for _, want := range []string{
		"| machine | AMD EPYC 7B13, 2 cores, 24.0 GiB memory |",
		"| took | 10 min 12 s |",
		"| waited for a quiet machine | gave up after 600 s (load 3.10) |",
		"```sh\ngo test -bench Sync ./bench\ngo test -bench . ./storage/catalog\n```",
		"**The machine was busy**",
		"**Failed:** github.com/catalogsync/catalogsync/bench",
		// sync: wall, MB/s, floor and ratio
		"| generated-x16 | 216.0 MB | fs | 1.79 s | 121 | 863 ms | 2.07× |",
		"| tiny | 2.1 KB | fs | 31.0 ms | 0.07 | 1.10 ms | 28.20× |",
		"| tiny | 2.1 KB | 28 MiB | 1.00× | 13 MiB | 1.00× | 30 MiB | 1.00× | 14 MiB | 1.00× |",
		// a reason given once in full is not repeated
		"| community-v4.21 | – | skipped (as above) | – | skipped (as above) | – | not run | – | not run | – |",
		"| community-v4.21 | – | fs | skipped: needs ../shared/testdata/fbc/community-v4.21 beside the repository: not found |",
		"| MinIO ÷ fs, `generated-x16` (each store is judged against its own floor) | 1.30× (2.33 s / 1.79 s) |",
		"resolving 4.00 ms, pulling 1.44 s, validating 41.0 ms, indexing 350 ms, publishing 1.00 ms",
		// both peaks against tiny's, per store
		"| generated-x16 | 216.0 MB | 58 MiB | 2.06× | 28 MiB | 2.08× | 62 MiB | 2.07× | 31 MiB | 2.20× |",
		"| tiny | 2.1 KB | not run | – | not run | – |",
		// each peak is the maximum of the iterations, and says so
		"| catalog | size | fs VmHWM (max) | × tiny | fs anon peak (max) | × tiny | MinIO VmHWM (max) | × tiny | MinIO anon peak (max) | × tiny |",
		// a table of one metric keeps its shape
		"| catalog | size | fs cold start | × tiny | MinIO cold start | × tiny |",
		// incremental against the full sync and the floor, with the targets
		"| catalog | size | store | full sync | × floor | incremental sync | × floor (v2's layer) | × floor in a running replica (full / incremental) | files reused | VmHWM (max) | anon peak (max) | targets |",
		"| generated-x16 | 216.0 MB | fs | 1.79 s | 2.07× | 1.10 s | 1.26× | 1.70× / 1.10× | 527 of 528 | 61 MiB | 33 MiB | incremental ≤ 1.3×: met; incremental in a running replica ≤ 1.3×: met; full ≤ 1.3× store floor: met; RSS ≤ 64 MiB (VmHWM): met; RSS ≤ 64 MiB (anonymous): met |",
		// VmHWM over the target, the anonymous peak under it: both verdicts shown
		"| generated-x16 | 216.0 MB | MinIO | 2.33 s | 2.87× | 1.50 s | 1.72× | – / – | 0 (no count reported) | 66 MiB | 52 MiB | incremental ≤ 1.3×: **not met**; incremental in a running replica ≤ 1.3×: n/a; full ≤ 1.3× store floor: n/a; RSS ≤ 64 MiB (VmHWM): **not met**; RSS ≤ 64 MiB (anonymous): met |",
		"| community-v4.21 | – | fs | skipped (as above) |",
		"| generated-x4 | – | MinIO | not run |",
		"fs sync (mean): pulling 900 ms.",
		// wrk against /healthz, and flatness
		"| `/healthz` (baseline) | – | fs | 52,000 | 900 µs |  |  | 1.00× |",
		"| `?package=kepler-operator-copy8` | generated-x16 | fs | 23,356 | 7.80 ms | not run | not run | 0.45× |",
		"−11% (23,356 vs 26,190) req/s on fs",
		// storm against a lone webhook
		"| 1,000 | 1.01 s | 2 | 600 µs | 1.50 ms | 2.10 ms | 500 µs | 1.20× | 3.00× |",
		// status against the apiserver's floor
		"| apiserver write→watch (baseline) | – | – | – | – | 2.00 ms | 4.00 ms | 1.00× |",
		"| tiny | failed: no version with Succeeded and Serving within 2m |",
		// micro-benchmarks by package
		"| `BenchmarkIndexLoad` | 1.37 ms | 428 | 1,056,944 | 4 | 584,232 index-bytes |",
		"| `./sync/fbc` | not run |",
		"| `BenchmarkCountBySchema` | skipped: community catalog absent: stat x: no such file |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("rendered document lacks %q", want)
		}
	}
	if strings.Contains(doc, "<no value>") {
		t.Error("the template used a missing value")
	}
	if t.Failed() {
		t.Log(doc)
	}
}

// Each peak has its own verdict: over the target, and absent (a run from
// before the anonymous peak was reported).
func TestVerdictPeaks(t *testing.T) {
	out := "BenchmarkSyncIncremental/generated-x16/fs-2 \t 1\t 5 ns/op\t 80.00 peak-RSS-MiB\t 70.00 peak-anon-MiB\n" +
		"BenchmarkSyncIncremental/generated-x16/s3-2 \t 1\t 5 ns/op\t 60.00 peak-RSS-MiB\n"
	run, err := Parse(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Run: run}
	for _, c := range []struct{ name, want string }{
		{"generated-x16/fs", "RSS ≤ 64 MiB (VmHWM): **not met**; RSS ≤ 64 MiB (anonymous): **not met**"},
		{"generated-x16/s3", "RSS ≤ 64 MiB (VmHWM): met; RSS ≤ 64 MiB (anonymous): n/a"},
	} {
		if got := r.verdict("generated-x16", incrBench+c.name, syncBench+c.name); !strings.HasSuffix(got, c.want) {
			t.Errorf("%s: %q, want it to end in %q", c.name, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		unit string
		v    float64
		want string
	}{
		{"storm-s", 0.9996, "1.00 s"},
		{"storm-s", 0.9994, "999 ms"},
		{"lat-mean-ms", 0.09999, "100 µs"},
		{"ns/op", 1790000000, "1.79 s"},
		{"ns/op", 9633, "9.63 µs"},
		{"req/s", 1234567.4, "1,234,567"},
		{"peak-RSS-MiB", 58.4, "58 MiB"},
		{"peak-anon-MiB", 13.6, "14 MiB"},
		{"x-floor", 2.0744, "2.07×"},
		{"catalog-MB", 222.31, "222.3 MB"},
		{"index-bytes", 584232, "584,232"},
	} {
		if got := fmtUnit(c.unit, c.v); got != c.want {
			t.Errorf("fmtUnit(%q, %v) = %q, want %q", c.unit, c.v, got, c.want)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	in := "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nphysical id\t: 0\ncore id\t: 0\n\n" +
		"processor\t: 1\nmodel name\t: AMD EPYC 7B13\nphysical id\t: 0\ncore id\t: 0\n\n" +
		"processor\t: 2\nmodel name\t: AMD EPYC 7B13\nphysical id\t: 0\ncore id\t: 1\n"
	model, cores, threads := parseCPUInfo(strings.NewReader(in))
	if model != "AMD EPYC 7B13" || cores != 2 || threads != 3 {
		t.Fatalf("got %q %d cores %d threads", model, cores, threads)
	}
	// Without topology (some VMs), cores are the processors.
	if _, cores, threads := parseCPUInfo(strings.NewReader("processor : 0\nprocessor : 1\n")); cores != 2 || threads != 2 {
		t.Fatalf("no topology: %d cores %d threads", cores, threads)
	}
	if got := parseMemInfo(strings.NewReader("MemTotal:       24576000 kB\nMemFree: 1 kB\n")); got != 24576000<<10 {
		t.Fatalf("MemTotal %d", got)
	}
}
