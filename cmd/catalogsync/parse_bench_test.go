package main

import (
	"io"
	"testing"
)

// BenchmarkParseServe parses serve's usual arguments: every start of a
// serving replica pays this before it listens.
func BenchmarkParseServe(b *testing.B) {
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		var c commands
		if _, _, err := parse(&c, []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn", "--store", dir}, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
