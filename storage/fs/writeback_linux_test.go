package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWritebackRanges checks the writer asks for writeback of each full
// 8 MiB it wrote, and of nothing it did not.
func TestWritebackRanges(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &writeback{f: f}
	chunk := bytes.Repeat([]byte("x"), 3<<20)
	for range 7 { // 21 MiB
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if w.written != 21<<20 || w.started != 18<<20 {
		t.Fatalf("written %d, writeback started up to %d; want %d and %d", w.written, w.started, 21<<20, 18<<20)
	}
}

// TestLargePutIntact writes more than several writeback ranges in odd-sized
// pieces and reads the same bytes back.
func TestLargePutIntact(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3*writebackEvery+12345)
	for i := range want {
		want[i] = byte(i * 7 / 5)
	}
	ctx := context.Background()
	if _, err := s.Put(ctx, "a/b", io.LimitReader(bytes.NewReader(want), int64(len(want)))); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "a/b", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(want))
	}
}
