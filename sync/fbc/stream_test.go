package fbc

import (
	"strings"
	"testing"
)

// A document may be exactly MaxDocumentBytes long; one byte more is
// refused. The window is set up as if that much had been kept, without
// holding 64 MiB.
func TestWindowDocumentLimit(t *testing.T) {
	for _, held := range []int{MaxDocumentBytes, MaxDocumentBytes + 1} {
		w := window{r: strings.NewReader("x"), base: held}
		ok := w.fill()
		if wantOK := held == MaxDocumentBytes; ok != wantOK || (w.err == nil) != wantOK {
			t.Errorf("%d bytes held: fill %v, %v", held, ok, w.err)
		}
	}
}

// The window's buffer grows only when less than half a read chunk of it
// is free, and then at least doubles. (Memory only: no output shows it.)
func TestWindowGrowth(t *testing.T) {
	for _, tc := range []struct{ free, wantCap int }{{readChunk / 2, readChunk}, {readChunk/2 - 1, 2 * readChunk}} {
		w := window{r: strings.NewReader("x"), buf: make([]byte, readChunk-tc.free, readChunk)}
		if !w.fill() || cap(w.buf) != tc.wantCap {
			t.Errorf("%d bytes free: cap %d after fill, want %d (%v)", tc.free, cap(w.buf), tc.wantCap, w.err)
		}
	}
	w := window{r: strings.NewReader("schema: a\n")}
	if !w.fill() || string(w.buf) != "schema: a\n" || cap(w.buf) != readChunk {
		t.Fatalf("first fill: %q (cap %d), %v", w.buf, cap(w.buf), w.err)
	}
}

// The window drops the input before keep once that is at least half of
// what it holds, and keeps its buffer then. (Memory only.)
func TestWindowCompaction(t *testing.T) {
	data := make([]byte, readChunk)
	for i := range data {
		data[i] = byte(i % 251)
	}
	for _, keep := range []int{0, readChunk/2 - 1, readChunk / 2, readChunk - 1} {
		w := window{r: strings.NewReader("x"), buf: append(make([]byte, 0, readChunk), data...), keep: keep}
		if !w.fill() {
			t.Fatalf("keep %d: fill: %v", keep, w.err)
		}
		wantBase := 0
		if keep >= readChunk/2 {
			wantBase = keep
		}
		if w.base != wantBase || string(w.bytes(keep, readChunk)) != string(data[keep:]) || string(w.bytes(readChunk, w.end())) != "x" {
			t.Errorf("keep %d: base %d, want %d; window holds %d bytes", keep, w.base, wantBase, len(w.buf))
		}
		if wantBase > 0 && cap(w.buf) != readChunk {
			t.Errorf("keep %d: cap %d after dropping half, want %d", keep, cap(w.buf), readChunk)
		}
	}
}

// The splitter hands out a document straight from the window unless a
// line had to be rewritten ("\r\n", or a last line without newline).
// (Memory only: the content is the same either way.)
func TestSplitterCopiesOnlyWhenNeeded(t *testing.T) {
	for _, c := range []struct {
		in, doc string
		copied  bool
	}{
		{"a: 1\n---\n", "a: 1\n", false},
		{"\na: 1\n---\n", "\na: 1\n", false},
		{"a: 1\r\n---\n", "a: 1\n", true},
		{"a: 1", "a: 1\n", true},
	} {
		w := window{r: strings.NewReader(c.in)}
		s := splitter{w: &w, line: 1}
		doc, _, err := s.next()
		if err != nil || string(doc) != c.doc || (len(s.scratch) > 0) != c.copied {
			t.Errorf("%q: %q (copied %v), %v; want %q (copied %v)", c.in, doc, len(s.scratch) > 0, err, c.doc, c.copied)
		}
	}
}
