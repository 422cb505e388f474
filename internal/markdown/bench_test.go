package markdown

import "testing"

// largestDescription is the largest description of the catalogs, cut
// as the pages cut it.
func largestDescription(b *testing.B) string {
	largest := ""
	for _, d := range catalogDescriptions(b) {
		if len(d) > len(largest) {
			largest = d
		}
	}
	b.SetBytes(int64(len(largest)))
	b.ReportAllocs()
	return largest
}

func BenchmarkHTML(b *testing.B) {
	d := largestDescription(b)
	for b.Loop() {
		HTML(d)
	}
}

// BenchmarkGoldmarkHTML is the oracle on the same description: what the
// pages spent before.
func BenchmarkGoldmarkHTML(b *testing.B) {
	d := largestDescription(b)
	for b.Loop() {
		goldmarkHTML(d)
	}
}

func BenchmarkText(b *testing.B) {
	d := largestDescription(b)
	for b.Loop() {
		Text(d, 300)
	}
}

func BenchmarkGoldmarkText(b *testing.B) {
	d := largestDescription(b)
	for b.Loop() {
		goldmarkText(d, 300)
	}
}
