package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"

	"github.com/catalogsync/catalogsync/storage"
)

// Copy implements storage.Copier with a hard link renamed into place, so
// no byte is copied and readers of dst see the old file or the new one.
// Objects are never changed in place (every write renames a new file), so
// the two names sharing a file is safe; dst's ETag is src's. Headers are
// not kept: a web server serving the root sets them from its own
// configuration. Where the filesystem refuses hard links the file is
// copied (storage.ErrCopyUnsupported makes storage.Copy stream it).
func (s *Store) Copy(ctx context.Context, dst, src string, _ storage.Headers) (storage.Info, error) {
	in, err := s.copy(ctx, dst, src)
	return in, denied(err)
}

func (s *Store) copy(ctx context.Context, dst, src string) (storage.Info, error) {
	if err := checkKey(dst); err != nil {
		return storage.Info{}, err
	}
	if err := checkKey(src); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	if _, err := s.stat(src); err != nil {
		return storage.Info{}, wrap("copy", src, err)
	}
	dir := path.Dir(dst)
	if dir != "." {
		if err := s.root.MkdirAll(dir, dirPerm); err != nil {
			return storage.Info{}, fmt.Errorf("fs: copy to %q: %w", dst, err)
		}
	}
	tmp := tempName(dir)
	if err := s.root.Link(src, tmp); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return storage.Info{}, wrap("copy", src, err)
		}
		if errors.Is(err, iofs.ErrPermission) {
			return storage.Info{}, fmt.Errorf("fs: copy to %q: %w", dst, err)
		}
		return storage.Info{}, fmt.Errorf("fs: copy to %q: %w: %w", dst, storage.ErrCopyUnsupported, err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		_ = s.root.Remove(tmp)
		return storage.Info{}, fmt.Errorf("fs: copy to %q: %w", dst, err)
	}
	defer unlock()
	if err := s.root.Rename(tmp, dst); err != nil {
		_ = s.root.Remove(tmp)
		return storage.Info{}, fmt.Errorf("fs: copy to %q: %w", dst, err)
	}
	s.syncDir(dir)
	fi, err := s.root.Lstat(dst)
	if err != nil {
		return storage.Info{}, fmt.Errorf("fs: copy to %q: %w", dst, err)
	}
	return info(dst, fi), nil
}
