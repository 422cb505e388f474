package pipeline

import (
	"bytes"
	"fmt"
	"io"
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
