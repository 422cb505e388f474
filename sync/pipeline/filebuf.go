package pipeline

import (
	"math/bits"
	"sync"
)

// fileBufs recycles the buffers files are read into before their parse,
// by power-of-two size: a full sync reads the whole catalog through them.
// It keeps at most max bytes of buffers given back. A sync.Pool did this
// before, but the GC empties it every other cycle, and a sync under its
// memory limit runs dozens: buffers were allocated again after each.
type fileBufs struct {
	mu   sync.Mutex
	free [33][][]byte // by size class
	kept int64        // bytes in free
	max  int64
}

func newFileBufs(max int64) *fileBufs { return &fileBufs{max: max} }

// get returns a buffer of length n.
func (fb *fileBufs) get(n int64) []byte {
	c := sizeClass(n)
	if c >= len(fb.free) {
		return make([]byte, n)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if k := len(fb.free[c]); k > 0 {
		b := fb.free[c][k-1]
		fb.free[c][k-1] = nil
		fb.free[c] = fb.free[c][:k-1]
		fb.kept -= int64(cap(b))
		return b[:n]
	}
	return make([]byte, n, 1<<c)
}

// put gives b back for another file; its contents are dead. A buffer
// that is not of its class's size, or beyond max, is left to the GC.
func (fb *fileBufs) put(b []byte) {
	c := sizeClass(int64(cap(b)))
	if c >= len(fb.free) || cap(b) != 1<<c {
		return
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.kept+int64(cap(b)) > fb.max {
		return
	}
	fb.kept += int64(cap(b))
	fb.free[c] = append(fb.free[c], b[:0])
}

// sizeClass is the power of two a buffer of n bytes is taken from.
func sizeClass(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}
