//go:build !linux

package fs

import "os"

// writeback is a plain writer where the kernel has no sync_file_range.
type writeback struct{ f *os.File }

func (w *writeback) Write(p []byte) (int, error) { return w.f.Write(p) }
