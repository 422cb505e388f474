package pipeline

import (
	"bytes"
	"fmt"
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
