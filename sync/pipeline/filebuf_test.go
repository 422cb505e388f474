package pipeline

import (
	"runtime"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/sync/fbc"
)

func TestFileBufSizes(t *testing.T) {
	fb := newFileBufs(8 << 20)
	for _, n := range []int64{0, 1, 2, 3, 4095, 4096, 4097, 400 << 10, 4 << 20, 4<<20 + 1} {
		b := fb.get(n)
		if int64(len(b)) != n {
			t.Fatalf("get(%d): len %d", n, len(b))
		}
		if c := cap(b); int64(c) < n || int64(c) >= 2*max(n, 1) {
			t.Fatalf("get(%d): cap %d, want the power of two at or above it", n, c)
		}
		fb.put(b)
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int64]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 4096: 12, 4097: 13} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestFileBufNotPooledWhenOdd checks a buffer whose capacity is not its
// class's (one a caller made itself) is not handed out for a larger file.
func TestFileBufNotPooledWhenOdd(t *testing.T) {
	fb := newFileBufs(1 << 20)
	fb.put(make([]byte, 0, 3000)) // class 12 is 4096
	if b := fb.get(4000); cap(b) < 4000 {
		t.Fatalf("get(4000) handed out a buffer of cap %d", cap(b))
	}
}

// TestFileBufReused: a buffer given back is handed out again for a file
// of its size class (the point: a full sync reads the whole catalog
// through these buffers), also after a GC, which empties a sync.Pool.
func TestFileBufReused(t *testing.T) {
	fb := newFileBufs(1 << 20)
	b := fb.get(5000)
	p := &b[:1][0]
	fb.put(b)
	runtime.GC()
	runtime.GC()
	if c := fb.get(6000); &c[:1][0] != p {
		t.Fatal("a buffer given back was not handed out again")
	}
}

// TestFileBufKeepsAtMostMax: buffers given back beyond the bound are
// dropped, whatever their number, and taking them out frees room.
func TestFileBufKeepsAtMostMax(t *testing.T) {
	fb := newFileBufs(64 << 10)
	bufs := make([][]byte, 10)
	for i := range bufs {
		bufs[i] = fb.get(16 << 10)
	}
	for _, b := range bufs {
		fb.put(b)
	}
	if fb.kept != 64<<10 || len(fb.free[sizeClass(16<<10)]) != 4 {
		t.Fatalf("kept %d bytes in %d buffers, want 64 KiB in 4", fb.kept, len(fb.free[sizeClass(16<<10)]))
	}
	fb.get(16 << 10)
	if fb.kept != 48<<10 {
		t.Fatalf("kept %d bytes after one out, want 48 KiB", fb.kept)
	}
	fb.put(make([]byte, 0, 16<<10))
	if fb.kept != 64<<10 {
		t.Fatalf("kept %d bytes after one out and one in, want 64 KiB", fb.kept)
	}
}

// A line above keepLine gets a buffer of its own: the one kept for the
// next line does not grow to it.
func TestLineBufferKeepsAtMostKeepLine(t *testing.T) {
	cw := &contentWrite{}
	if b := cw.line(keepLine + 1); len(b) != keepLine+1 || cap(cw.buf) != 0 {
		t.Fatalf("line of %d: len %d, kept cap %d", keepLine+1, len(b), cap(cw.buf))
	}
	if b := cw.line(keepLine); len(b) != keepLine || cap(cw.buf) != keepLine {
		t.Fatalf("line of %d: len %d, kept cap %d", keepLine, len(b), cap(cw.buf))
	}
}

// The pool keeps one parser that holds a large document's buffers and
// hands it to the files that may hold one; a second such parser is
// trimmed when given back.
func TestParsersKeepOneLargeParser(t *testing.T) {
	big := "schema: olm.package\nname: p\ndescription: " + strings.Repeat("x", 1<<20) + "\n"
	grown := func() *fbc.Parser {
		x := fbc.NewParser()
		if err := x.ParseBytes([]byte(big), func(fbc.Object) error { return nil }); err != nil || !x.Large() {
			t.Fatalf("parse: %v, large %v", err, x.Large())
		}
		return x
	}
	var ps parsers
	a, b := grown(), grown()
	ps.put(a)
	ps.put(b)
	if b.Large() || !a.Large() {
		t.Fatalf("after two large parsers: first large %v, second large %v; want only the first", a.Large(), b.Large())
	}
	if x := ps.get(false); x != b {
		t.Fatal("a file without large documents got the large parser while a small one was free")
	}
	if x := ps.get(false); x != a {
		t.Fatal("with only the large parser left, a file did not get it")
	}
	ps.put(a)
	ps.put(b)
	if x := ps.get(true); x != a {
		t.Fatal("a file that may hold a large document did not get the large parser")
	}
}
