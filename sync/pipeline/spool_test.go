package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
)

// TestSpoolReadsWhatItWasGiven: a line can be read back at its offset at
// once, before or after the buffer was flushed (a parse worker's lines
// are compared or copied while others are still appending).
func TestSpoolReadsWhatItWasGiven(t *testing.T) {
	sp, err := newSpool(t.TempDir(), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	var lines [][]byte
	var offs []int64
	for i := range 2000 { // over the 256 KiB buffer: some flushed, some not
		b := []byte(fmt.Sprintf("%d %s\n", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 100+i%300)))
		off, err := sp.append(b)
		if err != nil {
			t.Fatal(err)
		}
		lines, offs = append(lines, b), append(offs, off)
		if i%7 == 0 { // read back the newest, then an older one
			for _, j := range []int{i, i / 2} {
				got := make([]byte, len(lines[j]))
				if err := sp.readAt(got, offs[j]); err != nil || !bytes.Equal(got, lines[j]) {
					t.Fatalf("line %d read after %d appends: %q, %v", j, i+1, got, err)
				}
			}
		}
	}
}

// TestSpoolSectionReadsWhatItWasGiven: a large line read as a section
// right after it was appended, its end still in the buffer behind a
// small line, reads whole.
func TestSpoolSectionReadsWhatItWasGiven(t *testing.T) {
	sp, err := newSpool(t.TempDir(), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	if _, err := sp.append([]byte("small\n")); err != nil {
		t.Fatal(err)
	}
	large := append(bytes.Repeat([]byte("l"), 300<<10), '\n')
	off, err := sp.append(large)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sp.section(off, int64(len(large)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, large) {
		t.Fatalf("read %d of %d bytes (%v)", len(got), len(large), err)
	}
}

// TestChunkWriterPlacesEveryLine: two workers' files written through
// chunks at once, lines below, across and above the chunk size: each
// object's offset reads back its own line, and a file's lines within
// one chunk lie together.
func TestChunkWriterPlacesEveryLine(t *testing.T) {
	sp, err := newSpool(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.remove()
	sizes := []int{1, 100, chunkSize - 1, chunkSize, chunkSize + 1, 3000, 2 * chunkSize, 7}
	files := make([]*fileResult, 6)
	lines := make([][][]byte, len(files))
	var wg sync.WaitGroup
	for f := range files {
		wg.Go(func() {
			fr := &fileResult{}
			cw := &chunkWriter{sp: sp, buf: make([]byte, 0, chunkSize)}
			for i := range 40 {
				n := sizes[(i+f)%len(sizes)]
				line := append(bytes.Repeat([]byte{byte('a' + f)}, n-1), '\n')
				line[0] = byte(i)
				lines[f] = append(lines[f], line)
				if err := cw.add(fr, objRec{n: n}, line); err != nil {
					t.Error(err)
					return
				}
			}
			if err := cw.flush(fr); err != nil {
				t.Error(err)
			}
			files[f] = fr
		})
	}
	wg.Wait()
	for f, fr := range files {
		if len(fr.objs) != len(lines[f]) {
			t.Fatalf("file %d: %d objects, want %d", f, len(fr.objs), len(lines[f]))
		}
		for i, o := range fr.objs {
			got := make([]byte, o.n)
			if err := sp.readAt(got, o.off); err != nil || !bytes.Equal(got, lines[f][i]) {
				t.Fatalf("file %d object %d at %d: read %.20q (%v), want %.20q", f, i, o.off, got, err, lines[f][i])
			}
		}
	}
	// In one worker's file, two small lines added one after the other
	// into the same chunk lie together.
	fr := files[0]
	if fr.objs[1].off != fr.objs[0].off+int64(fr.objs[0].n) {
		t.Errorf("lines 0 and 1 of a file at %d+%d and %d: not together", fr.objs[0].off, fr.objs[0].n, fr.objs[1].off)
	}
}
