package pipeline

import (
	"math/bits"
	"sync"
)

// fileBufs recycles the buffers files are read into before their parse,
// one pool per power-of-two size: a full sync reads the whole catalog
// through them, and allocating each anew made the GC run twice as often
// under the sync's memory limit. The parse budget still bounds the bytes
// in use; the pools hold only what the GC has not yet reclaimed.
var fileBufs [33]sync.Pool

// getFileBuf returns a buffer of length n.
func getFileBuf(n int64) []byte {
	c := sizeClass(n)
	if c >= len(fileBufs) {
		return make([]byte, n)
	}
	if b, ok := fileBufs[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putFileBuf gives b back for another file; its contents are dead.
func putFileBuf(b []byte) {
	c := sizeClass(int64(cap(b)))
	if c >= len(fileBufs) || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	fileBufs[c].Put(&b)
}

// sizeClass is the power of two a buffer of n bytes is taken from.
func sizeClass(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}
