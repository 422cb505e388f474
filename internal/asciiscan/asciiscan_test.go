package asciiscan

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func jsonStringRef(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return len(b)
}

func indexAny3Ref(b []byte, x, y, z byte) int {
	for i, c := range b {
		if c == x || c == y || c == z {
			return i
		}
	}
	return -1
}

func printableLinesRef(b []byte) int {
	for i, c := range b {
		if !(c >= 0x20 && c < 0x7F || c == '\n') {
			return i
		}
	}
	return len(b)
}

// TestEveryByteAtEveryPosition puts each of the 256 byte values at each
// position of a word-and-a-half of plain text, and next to each other
// value, so a carry between bytes or a wrong constant shows.
func TestEveryByteAtEveryPosition(t *testing.T) {
	for c := range 256 {
		for d := range 256 {
			for pos := range 12 {
				b := []byte("abcdefghijklmnopq")
				b[pos] = byte(c)
				b[pos+1] = byte(d)
				if got, want := JSONString(b), jsonStringRef(b); got != want {
					t.Fatalf("JSONString(%q) = %d, want %d", b, got, want)
				}
				if got, want := PrintableLines(b), printableLinesRef(b); got != want {
					t.Fatalf("PrintableLines(%q) = %d, want %d", b, got, want)
				}
				if got, want := IndexAny3(b, '\n', ':', byte(d)), indexAny3Ref(b, '\n', ':', byte(d)); got != want {
					t.Fatalf("IndexAny3(%q, %q) = %d, want %d", b, byte(d), got, want)
				}
			}
		}
	}
}

func TestEmptyAndShort(t *testing.T) {
	for _, s := range []string{"", "a", "\"", "abcdefg", "abcdefgh", "abcdefghi", "abcdefg\n", "\x7f"} {
		if got, want := JSONString([]byte(s)), jsonStringRef([]byte(s)); got != want {
			t.Errorf("JSONString(%q) = %d, want %d", s, got, want)
		}
		if got, want := PrintableLines([]byte(s)), printableLinesRef([]byte(s)); got != want {
			t.Errorf("PrintableLines(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzAgainstByteLoop(f *testing.F) {
	f.Add([]byte("description: \"an operator\"\n\x7f\xe2\x80\xa8"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := JSONString(b), jsonStringRef(b); got != want {
			t.Fatalf("JSONString = %d, want %d", got, want)
		}
		if got, want := PrintableLines(b), printableLinesRef(b); got != want {
			t.Fatalf("PrintableLines = %d, want %d", got, want)
		}
		if got, want := IndexAny3(b, '\n', ':', '#'), indexAny3Ref(b, '\n', ':', '#'); got != want {
			t.Fatalf("IndexAny3 = %d, want %d", got, want)
		}
	})
}

func BenchmarkJSONString(b *testing.B) {
	buf := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(0x20 + r.IntN(0x5E))
		if buf[i] == '"' || buf[i] == '\\' {
			buf[i] = 'x'
		}
	}
	b.SetBytes(int64(len(buf)))
	b.Run("words", func(b *testing.B) {
		for range b.N {
			JSONString(buf)
		}
	})
	b.Run("bytes", func(b *testing.B) {
		for range b.N {
			jsonStringRef(buf)
		}
	})
}

// TestBytesPastLenIgnored: whatever lies between len and cap does not
// change the answer.
func TestBytesPastLenIgnored(t *testing.T) {
	for n := range 17 {
		for _, special := range []byte{'"', '\\', 0, 0x80} {
			for at := n; at < n+9; at++ {
				buf := make([]byte, 32)
				for i := range buf {
					buf[i] = 'x'
				}
				buf[at] = special
				if got := JSONString(buf[:n]); got != n {
					t.Errorf("n=%d, %q at %d past len: %d", n, special, at, got)
				}
			}
		}
	}
}

func BenchmarkJSONStringShort(b *testing.B) {
	keys := [][]byte{[]byte("name"), []byte("schema"), []byte("olm.bundle"), []byte("packageName"), []byte("value"), []byte("type"), []byte("1.2.3")}
	buf := make([]byte, 0, 256)
	var ss [][]byte
	for _, k := range keys {
		start := len(buf)
		buf = append(buf, k...)
		buf = append(buf, ':', ' ')
		ss = append(ss, buf[start:start+len(k)])
	}
	for range b.N {
		for _, s := range ss {
			JSONString(s)
		}
	}
}

// TestLongInputsEveryByteAtEveryPosition: inputs long enough for the
// 32-byte loops (where the CPU has them), each byte value at each
// position, in the first block, a later one and the tail past the last
// whole block.
func TestLongInputsEveryByteAtEveryPosition(t *testing.T) {
	for _, n := range []int{31, 32, 33, 63, 64, 65, 95, 96, 97, 100, 129} {
		b := make([]byte, n)
		for pos := range n {
			for c := range 256 {
				for i := range b {
					b[i] = 'a' + byte(i%26)
				}
				b[pos] = byte(c)
				if got, want := JSONString(b), jsonStringRef(b); got != want {
					t.Fatalf("JSONString, %d bytes, %#x at %d: %d, want %d", n, c, pos, got, want)
				}
				if got, want := PrintableLines(b), printableLinesRef(b); got != want {
					t.Fatalf("PrintableLines, %d bytes, %#x at %d: %d, want %d", n, c, pos, got, want)
				}
				if got, want := IndexAny3(b, '\n', ':', '#'), indexAny3Ref(b, '\n', ':', '#'); got != want {
					t.Fatalf("IndexAny3, %d bytes, %#x at %d: %d, want %d", n, c, pos, got, want)
				}
			}
		}
	}
}

// TestLongInputsFirstOfSeveral: with several stopping bytes in one block,
// the first is found.
func TestLongInputsFirstOfSeveral(t *testing.T) {
	b := []byte(strings.Repeat("x", 100))
	for _, pos := range []int{0, 5, 31, 32, 40, 63, 64, 90} {
		c := bytes.Clone(b)
		c[pos], c[min(pos+1, 99)], c[min(pos+7, 99)] = '"', '\\', 0x01
		if got := JSONString(c); got != pos {
			t.Errorf("JSONString: %d, want %d", got, pos)
		}
		c[pos], c[min(pos+1, 99)], c[min(pos+7, 99)] = 0x7F, 0x80, '\t'
		if got := PrintableLines(c); got != pos {
			t.Errorf("PrintableLines: %d, want %d", got, pos)
		}
		c[pos], c[min(pos+1, 99)], c[min(pos+7, 99)] = '#', ':', '\n'
		if got := IndexAny3(c, '\n', ':', '#'); got != pos {
			t.Errorf("IndexAny3: %d, want %d", got, pos)
		}
	}
}
