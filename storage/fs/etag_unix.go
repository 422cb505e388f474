//go:build unix

package fs

import (
	"io/fs"
	"strconv"
	"syscall"
)

// etag is inode, mtime in ns and size. Every write renames a fresh file into
// place, so the inode changes on each replace; the mtime guards against a
// freed inode number coming back.
func etag(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	b := make([]byte, 0, 48)
	b = strconv.AppendUint(b, ino, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.Size(), 16)
	return string(b)
}
