// Package storage defines the object store every catalogsync backend
// implements. Keys are slash-separated paths ("catalogs/x/current"); a
// backend maps them onto files or objects. Large objects are written as
// streams, small control objects (pointers) with a compare-and-swap.
package storage

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

var (
	// ErrNotExist is returned when a key has no object.
	ErrNotExist = errors.New("object does not exist")
	// ErrPrecondition is returned by PutIf when the object's current ETag
	// is not the one the caller expected (or exists when it expected none).
	ErrPrecondition = errors.New("precondition failed")
	// ErrInvalidKey is returned for keys that are empty, absolute, or that
	// could leave the store's root ("..", backslashes, NUL bytes).
	ErrInvalidKey = errors.New("invalid key")
	// ErrDenied is returned by a write the store refuses this process:
	// permissions, a read-only mount or bucket policy. An operator's to
	// fix: retrying as it is does not help.
	ErrDenied = errors.New("store refuses writes")
)

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
	// ETag changes whenever the object's content is replaced. It is opaque:
	// compare it only for equality.
	ETag string
}

// Store is an object store. All methods are safe for concurrent use.
type Store interface {
	// Put writes the whole stream under key, replacing any object there.
	// Readers never see a partly written object: they see the old one or
	// the new one. On error nothing is left under key that was not there.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)

	// Get opens the object at key for reading length bytes from offset.
	// length < 0 reads to the end. A range past the end is clipped.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// Stat returns the object's Info or ErrNotExist.
	Stat(ctx context.Context, key string) (Info, error)

	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)

	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error

	// PutIf atomically replaces a small object only when its current ETag is
	// ifMatch; ifMatch == "" means the object must not exist yet. It returns
	// ErrPrecondition otherwise. It is the only way to publish a pointer.
	PutIf(ctx context.Context, key string, data []byte, ifMatch string) (Info, error)
}

// InfoGetter is implemented by stores that give an object's Info with its
// bytes in one request: S3's GetObject answers with the ETag of the version
// it sends, where a Stat first would cost a round trip more.
type InfoGetter interface {
	// GetInfo is Get, also returning the Info of the object read (Size is
	// the whole object's).
	GetInfo(ctx context.Context, key string, offset, length int64) (io.ReadCloser, Info, error)
}

// GetInfo opens key as Get does and returns the object's Info with it: in
// one request where s is an InfoGetter, else a Stat and then a Get, so the
// ETag is never newer than the bytes (a compare-and-swap with it fails if
// they changed in between).
func GetInfo(ctx context.Context, s Store, key string, offset, length int64) (io.ReadCloser, Info, error) {
	if g, ok := s.(InfoGetter); ok {
		return g.GetInfo(ctx, key, offset, length)
	}
	in, err := s.Stat(ctx, key)
	if err != nil {
		return nil, Info{}, err
	}
	rc, err := s.Get(ctx, key, offset, length)
	if err != nil {
		return nil, Info{}, err
	}
	return rc, in, nil
}

// Headers are what an HTTP GET of an object answers with besides its
// bytes, for stores that HTTP clients read directly (an S3 bucket, or a
// web server in front of a directory).
type Headers struct {
	ContentType     string
	ContentEncoding string
}

// HeaderPutter is implemented by stores that keep headers with an object:
// S3 answers a GET with the Content-Type and Content-Encoding it was
// written with. A store without it serves what its reader decides (a web
// server in front of the fs backend: its own configuration).
type HeaderPutter interface {
	// PutHeaders is Put, storing h with the object.
	PutHeaders(ctx context.Context, key string, r io.Reader, h Headers) (Info, error)
}

// PutHeaders writes r under key as Put does, with h where s keeps headers.
func PutHeaders(ctx context.Context, s Store, key string, r io.Reader, h Headers) (Info, error) {
	if p, ok := s.(HeaderPutter); ok {
		return p.PutHeaders(ctx, key, r, h)
	}
	return s.Put(ctx, key, r)
}

// ErrCopyUnsupported is returned by Copier.Copy for an object the store
// cannot copy itself (S3's CopyObject stops at 5 GiB): Copy then streams it.
var ErrCopyUnsupported = errors.New("store cannot copy this object itself")

// Copier is implemented by stores that copy an object without its bytes
// passing through this process: S3's CopyObject, a hard link on fs.
type Copier interface {
	// Copy replaces dst with the bytes of src and the headers h, readers
	// of dst seeing the old object or the new one as with Put. A missing
	// src is ErrNotExist.
	Copy(ctx context.Context, dst, src string, h Headers) (Info, error)
}

// Copy replaces dst with a copy of src carrying h: inside the store where
// s is a Copier that can, else streamed through this process (memory
// stays that of one buffer whatever the size).
func Copy(ctx context.Context, s Store, dst, src string, h Headers) (Info, error) {
	if c, ok := s.(Copier); ok {
		in, err := c.Copy(ctx, dst, src, h)
		if !errors.Is(err, ErrCopyUnsupported) {
			return in, err
		}
	}
	rc, err := s.Get(ctx, src, 0, -1)
	if err != nil {
		return Info{}, err
	}
	defer rc.Close()
	return PutHeaders(ctx, s, dst, rc, h)
}

// ValidKey reports whether key is a clean relative slash path that stays
// inside the store.
func ValidKey(key string) bool {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") ||
		strings.ContainsAny(key, "\\\x00") {
		return false
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// Close releases a store's handles, for backends that hold any.
func Close(s Store) {
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
}
