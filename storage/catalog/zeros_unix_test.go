//go:build unix

package catalog

import (
	"syscall"
	"testing"
)

// zeroBytes returns n zero bytes that cost nothing until read: a
// read-only anonymous mapping, where make would clear n bytes of heap.
func zeroBytes(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}
