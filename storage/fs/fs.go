// Package fs is the local filesystem storage backend, the embedded default.
//
// A key maps to the file root/key. Writes go to a temp file in the target's
// directory, are fsynced and renamed into place, so readers see the old or
// the new file, never a partial one. All access goes through os.Root, so no
// key and no symlink planted inside the root can reach outside it.
//
// Names reserved by the backend, which are therefore invalid key segments:
// any segment starting with ".tmp-" (temp files of writers in flight, or
// leftovers of crashed ones; see CleanTemp) and the root file ".putif.lock"
// (the lock that makes PutIf atomic across goroutines and processes).
//
// Unlike S3, a key cannot be both an object and a "directory": with "a/b"
// stored, Put("a/b/c") fails, and the other way round.
package fs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

const (
	// TempPrefix starts the name of every temp file the backend writes.
	TempPrefix = ".tmp-"
	lockName   = ".putif.lock"

	filePerm = 0o644
	dirPerm  = 0o755
)

// Store is a storage.Store on a local directory. Several Stores, in one or in
// several processes, may share a root.
type Store struct {
	root *os.Root
	// sem serializes this Store's lock holders before they reach flock, so
	// waiters queue in Go (honouring ctx) rather than in the kernel.
	sem chan struct{}
}

var (
	_ storage.Store      = (*Store)(nil)
	_ storage.InfoGetter = (*Store)(nil)
	_ storage.Copier     = (*Store)(nil)
)

// New opens (creating it if needed) the directory root as a store.
func New(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("fs: empty root")
	}
	if err := os.MkdirAll(root, dirPerm); err != nil { //nolint:gosec // G703: root is the operator's setting
		return nil, fmt.Errorf("fs: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	return &Store{root: r, sem: make(chan struct{}, 1)}, nil
}

// Close releases the root directory handle. The Store is unusable after.
func (s *Store) Close() error { return s.root.Close() }

// checkKey validates key for this backend: a storage.ValidKey that does not
// use a reserved name.
func checkKey(key string) error {
	if !storage.ValidKey(key) || key == lockName {
		return fmt.Errorf("fs: %q: %w", key, storage.ErrInvalidKey)
	}
	for part := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(part, TempPrefix) {
			return fmt.Errorf("fs: %q: reserved name: %w", key, storage.ErrInvalidKey)
		}
	}
	return nil
}

// denied marks a mutation's permission and read-only failures as
// storage.ErrDenied.
func denied(err error) error {
	if err != nil && (errors.Is(err, iofs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		return fmt.Errorf("%w (%w)", err, storage.ErrDenied)
	}
	return err
}

// wrap maps filesystem errors onto the storage sentinels. A missing parent
// or a parent that is a file (ENOTDIR) both mean "no object here".
func wrap(op, key string, err error) error {
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("fs: %s %q: %w", op, key, storage.ErrNotExist)
	}
	return fmt.Errorf("fs: %s %q: %w", op, key, err)
}

func info(key string, fi iofs.FileInfo) storage.Info {
	return storage.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), ETag: etag(fi)}
}

// stat returns the object at key. Only regular files are objects: a
// directory or a symlink at key is reported missing, which keeps Stat and
// Get consistent with List (which does not follow symlinks).
func (s *Store) stat(key string) (iofs.FileInfo, error) {
	fi, err := s.root.Lstat(key)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, iofs.ErrNotExist
	}
	return fi, nil
}

// Stat implements storage.Store.
func (s *Store) Stat(ctx context.Context, key string) (storage.Info, error) {
	if err := checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	fi, err := s.stat(key)
	if err != nil {
		return storage.Info{}, wrap("stat", key, err)
	}
	return info(key, fi), nil
}

// Get implements storage.Store. The returned reader keeps the opened file,
// so a concurrent replace or delete does not disturb it.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rc, _, err := s.GetInfo(ctx, key, offset, length)
	return rc, err
}

// GetInfo implements storage.InfoGetter: the Info is the opened file's.
func (s *Store) GetInfo(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	if err := checkKey(key); err != nil {
		return nil, storage.Info{}, err
	}
	if offset < 0 {
		return nil, storage.Info{}, fmt.Errorf("fs: get %q: negative offset %d", key, offset)
	}
	if err := ctx.Err(); err != nil {
		return nil, storage.Info{}, err
	}
	if _, err := s.stat(key); err != nil {
		return nil, storage.Info{}, wrap("get", key, err)
	}
	f, err := s.root.Open(key)
	if err != nil {
		return nil, storage.Info{}, wrap("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, storage.Info{}, wrap("get", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, storage.Info{}, wrap("get", key, iofs.ErrNotExist)
	}
	size := fi.Size()
	offset = min(offset, size)
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	return &reader{ctx: ctx, r: io.NewSectionReader(f, offset, n), f: f}, info(key, fi), nil
}

type reader struct {
	ctx context.Context
	r   *io.SectionReader
	f   *os.File
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (r *reader) Close() error { return r.f.Close() }

// Put implements storage.Store. Cancellation is noticed between reads of r;
// a Read that blocks forever blocks Put too.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	if err := checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	in, err := s.write(ctx, key, r, false)
	return in, denied(err)
}

// PutIf implements storage.Store. The whole compare-and-write runs under
// the root's lock, which every other mutation also takes for its final
// step, so no rename can slip between the compare and the write.
func (s *Store) PutIf(ctx context.Context, key string, data []byte, ifMatch string) (storage.Info, error) {
	in, err := s.putIf(ctx, key, data, ifMatch)
	return in, denied(err)
}

func (s *Store) putIf(ctx context.Context, key string, data []byte, ifMatch string) (storage.Info, error) {
	if err := checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return storage.Info{}, fmt.Errorf("fs: putif %q: %w", key, err)
	}
	defer unlock()
	fi, err := s.stat(key)
	switch {
	case err != nil && !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return storage.Info{}, wrap("putif", key, err)
	case err != nil && ifMatch != "":
		return storage.Info{}, fmt.Errorf("fs: putif %q: object missing: %w", key, storage.ErrPrecondition)
	case err == nil && etag(fi) != ifMatch:
		return storage.Info{}, fmt.Errorf("fs: putif %q: etag %s: %w", key, etag(fi), storage.ErrPrecondition)
	}
	return s.write(ctx, key, bytes.NewReader(data), true)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// write streams r into a temp file next to key and renames it into place;
// locked says the caller already holds the root lock.
func (s *Store) write(ctx context.Context, key string, r io.Reader, locked bool) (storage.Info, error) {
	f, tmp, err := s.createTemp(key)
	if err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			_ = s.root.Remove(tmp) // best effort: List skips temp files
		}
	}()
	// writeback also hides os.File.ReadFrom, so the copy uses our larger buffer.
	if l, ok := r.(interface{ Len() int }); ok && l.Len() < 4<<10 {
		// A lease, probe or pointer: the pooled buffer is for catalogs
		// and would keep 256 KiB in an idle server for a 40-byte write.
		_, err = io.CopyBuffer(&writeback{f: f}, ctxReader{ctx, r}, make([]byte, l.Len()+1))
	} else {
		buf := bufPool.Get().(*[]byte)
		_, err = io.CopyBuffer(&writeback{f: f}, ctxReader{ctx, r}, *buf)
		bufPool.Put(buf)
	}
	if err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	// An explicit nanosecond mtime (kernel timestamps are often only
	// jiffy-precise) keeps the inode+mtime+size ETag from repeating when a
	// freed inode number is reused for the same key.
	now := time.Now()
	if err := s.root.Chtimes(tmp, now, now); err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	if !locked {
		unlock, err := s.lock(ctx)
		if err != nil {
			return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
		}
		defer unlock()
	}
	if err := s.root.Rename(tmp, key); err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	renamed = true
	s.syncDir(path.Dir(key))
	fi, err := s.root.Lstat(key)
	if err != nil {
		return storage.Info{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	return info(key, fi), nil
}

// createTemp creates a fresh temp file in key's directory, creating the
// directory. A concurrent Delete may remove the directory between MkdirAll
// and the create, so that is retried.
func (s *Store) createTemp(key string) (*os.File, string, error) {
	dir := path.Dir(key)
	for attempt := 0; ; attempt++ {
		if dir != "." {
			if err := s.root.MkdirAll(dir, dirPerm); err != nil {
				return nil, "", err
			}
		}
		tmp := tempName(dir)
		f, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if err == nil {
			return f, tmp, nil
		}
		if attempt >= 5 || !(errors.Is(err, iofs.ErrNotExist) || errors.Is(err, iofs.ErrExist)) {
			return nil, "", err
		}
	}
}

// tempName is a fresh name for a temp file in dir, which CleanTemp
// recognises by its TempPrefix.
func tempName(dir string) string {
	var b [8]byte
	rand.Read(b[:])
	return path.Join(dir, TempPrefix+hex.EncodeToString(b[:]))
}

// syncDir makes a rename or remove in dir durable. Best effort: the data
// itself was already synced, and not every filesystem supports it.
func (s *Store) syncDir(dir string) {
	d, err := s.root.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync() // best effort, as above
	d.Close()
}

// Delete implements storage.Store. Emptied parent directories are removed
// up to the root, best effort.
func (s *Store) Delete(ctx context.Context, key string) error {
	return denied(s.delete(ctx, key))
}

func (s *Store) delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return fmt.Errorf("fs: delete %q: %w", key, err)
	}
	defer unlock()
	if _, err := s.stat(key); err != nil {
		if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return wrap("delete", key, err)
	}
	if err := s.root.Remove(key); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return wrap("delete", key, err)
	}
	dir := path.Dir(key)
	s.syncDir(dir)
	for ; dir != "."; dir = path.Dir(dir) {
		// Lstat first: Remove would also unlink a symlink standing in
		// for a directory.
		if fi, err := s.root.Lstat(dir); err != nil || !fi.IsDir() || s.root.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// reservedName reports names the backend writes for itself.
func reservedName(p string) bool {
	return p == lockName || strings.HasPrefix(path.Base(p), TempPrefix)
}

// List implements storage.Store. Only regular files are listed; symlinks
// and the backend's own temp and lock files are skipped.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if !storage.ValidPrefix(prefix) {
		return nil, fmt.Errorf("fs: list %q: %w", prefix, storage.ErrInvalidKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Walk only the deepest directory the prefix names completely.
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	var out []storage.Info
	err := iofs.WalkDir(s.root.FS(), start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			// A missing start or an entry deleted during the walk.
			if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				if p == start {
					return iofs.SkipAll
				}
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != start && (reservedName(p) ||
				!strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/")) {
				return iofs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || reservedName(p) || !strings.HasPrefix(p, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil
			}
			return err
		}
		out = append(out, info(p, fi))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fs: list %q: %w", prefix, err)
	}
	// Walk order is per-directory, not bytewise over whole keys
	// ("a.b" < "a/b" although the walk visits a/ first).
	slices.SortFunc(out, func(a, b storage.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// CleanTemp removes temp files last modified before olderThan ago: the
// leftovers of writers that crashed between create and rename. A writer
// still streaming keeps touching its file, so a generous olderThan (an hour)
// never removes live ones. It returns how many files it removed.
func (s *Store) CleanTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	err := iofs.WalkDir(s.root.FS(), ".", func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := s.root.Remove(p); err == nil {
			removed++
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("fs: clean temp: %w", err)
	}
	return removed, nil
}
