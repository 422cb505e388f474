// Package asciiscan finds the end of runs of plain ASCII eight bytes at a
// time, or 32 where the CPU has AVX2. A catalog is mostly such runs, and
// the JSON encoder, the JSON scanners and the YAML parser each walked
// them a byte at a time: about a fifth of a full sync's CPU.
package asciiscan

import (
	"encoding/binary"
	"math/bits"
)

const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
	m7 = 0x7F7F7F7F7F7F7F7F
)

// wideMin is the shortest input handed to the 32-byte loops (see wide):
// below it the call costs more than the words it spares.
const wideMin = 32

// Each helper sets a byte's high bit exactly when the byte matches, with
// no carry between bytes, so any set bit names a matching byte.

// below20 marks bytes < 0x20.
func below20(x uint64) uint64 { return ^((x & m7) + lo*0x60) & ^x & hi }

// equal marks bytes equal to c.
func equal(x uint64, c byte) uint64 {
	y := x ^ lo*uint64(c)
	return ^((y & m7) + m7 | y) & hi
}

// JSONString returns the length of b's leading run of bytes a JSON string
// holds verbatim and that need no further look: printable ASCII and DEL,
// except '"' and '\\'. Control bytes, quotes, backslashes and bytes of
// multi-byte characters end it. It may read up to seven bytes past
// len(b), within cap(b); they do not change the result.
func JSONString(b []byte) int {
	i := 0
	if wide && len(b) >= wideMin {
		if i = jsonStringAVX2(b); i < len(b)&^31 {
			return i
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := jsonMask(x); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if n := len(b) - i; n > 0 && cap(b)-i >= 8 {
		// Catalog strings are mostly shorter than a word: read one
		// whole, past len but within cap, and ignore the bytes past len.
		m := jsonMask(binary.LittleEndian.Uint64(b[i : i+8]))
		if m &= 1<<(8*n) - 1; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return i
}

func jsonMask(x uint64) uint64 { return below20(x) | equal(x, '"') | equal(x, '\\') | x&hi }

// PrintableLines returns the length of b's leading run of printable ASCII
// (0x20 to 0x7E) and '\n'.
func PrintableLines(b []byte) int {
	i := 0
	if wide && len(b) >= wideMin {
		if i = printableLinesAVX2(b); i < len(b)&^31 {
			return i
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := below20(x)&^equal(x, '\n') | equal(x, 0x7F) | x&hi; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; !(c >= 0x20 && c < 0x7F || c == '\n') {
			return i
		}
	}
	return i
}

// IndexAny3 returns the index of the first of x, y or z in b, or -1.
func IndexAny3(b []byte, x, y, z byte) int {
	i := 0
	if wide && len(b) >= wideMin {
		if i = indexAny3AVX2(b, x, y, z); i < len(b)&^31 {
			return i
		}
	}
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := equal(w, x) | equal(w, y) | equal(w, z); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == x || c == y || c == z {
			return i
		}
	}
	return -1
}
