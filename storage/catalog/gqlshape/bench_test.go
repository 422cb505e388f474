package gqlshape

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkObserve is discovery's cost per catalog byte, what it adds to
// a sync: $CATALOGSYNC_BENCH_JSONL names a catalog.jsonl (skipped without).
func BenchmarkObserve(b *testing.B) {
	p := os.Getenv("CATALOGSYNC_BENCH_JSONL")
	if p == "" {
		b.Skip("set CATALOGSYNC_BENCH_JSONL to a catalog.jsonl")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	schemas := make([]string, len(lines))
	for i, l := range lines {
		var o struct{ Schema string }
		json.Unmarshal(l, &o)
		schemas[i] = o.Schema
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s := New()
		for i, l := range lines {
			s.Observe(schemas[i], l)
		}
	}
}
