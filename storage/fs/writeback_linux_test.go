package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWritebackRanges checks the writer asks for writeback of each full
// 8 MiB it wrote, and of nothing it did not, and drops all but the last
// range it started.
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
	if w.written != 21<<20 || w.started != 18<<20 || w.dropped != 9<<20 {
		t.Fatalf("written %d, writeback started up to %d, dropped up to %d; want %d, %d and %d",
			w.written, w.started, w.dropped, 21<<20, 18<<20, 9<<20)
	}
}

// TestWrittenRangesLeaveThePageCache checks the pages of the ranges the
// writer dropped are no longer cached, and those it did not still are.
func TestWrittenRangesLeaveThePageCache(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temp folder is on tmpfs, which keeps every page it holds; set TMPDIR to a disk's folder")
	}
	f, err := os.Create(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &writeback{f: f}
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	for range 3*writebackEvery>>20 + 1 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	page := int64(os.Getpagesize())
	cached := func(from, to int64) int64 {
		var cs unix.Cachestat_t
		err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: uint64(from), Len: uint64(to - from)}, &cs, 0)
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("this kernel has no cachestat(2) (Linux 6.5 and later have it)")
		}
		if err != nil {
			t.Fatalf("cachestat: %v", err)
		}
		return int64(cs.Cache)
	}
	if w.dropped == 0 {
		t.Fatalf("nothing dropped after %d bytes", w.written)
	}
	if n := cached(0, w.dropped); n > 0 {
		t.Errorf("%d of the %d pages dropped are still cached", n, w.dropped/page)
	}
	if n := cached(w.started, w.written); n == 0 {
		t.Errorf("none of the %d pages written since the last range started are cached", (w.written-w.started)/page)
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
