package catalog

// The static read layout. With it, every publish also leaves in the store
// what catalogd's /api/v1/all answers, so HTTP clients read a catalog
// straight from the bucket (or a cache in front of it), no catalogsync
// process on the read path:
//
//	catalogs/<name>/api/v1/all       the published catalog.jsonl, application/jsonl
//	catalogs/<name>/api/v1/all.gz    the same gzipped, Content-Encoding gzip
//	catalogs/<name>/static           which digest those two hold, and their ETags
//	catalogs/<name>/<alg>-<hex>/catalog.jsonl.gz  the gzip of each digest
//
// The two api/v1 objects are copies (inside the store where it can) of
// the published digest's catalog.jsonl and catalog.jsonl.gz, which stay
// addressable while GC keeps the digest: a reader that must not see the
// catalog change under it between requests reads those. Content for the
// layout is written whole (Static), never as shared extents, so
// catalog.jsonl is one object a store can copy without the bytes passing
// through this process.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/catalogsync/catalogsync/storage"
)

const (
	staticAll    = "api/v1/all"
	staticGzip   = "api/v1/all.gz"
	staticMarker = "static"
	gzipFile     = contentFile + ".gz"
	// staticRounds bounds how often PublishStatic follows a pointer that
	// moves under it; the publisher that moved it converges it too.
	staticRounds = 5
)

var (
	// ErrStaticMoving is returned by PublishStatic when the pointer moved
	// every round: the publishers moving it leave the layout at its end.
	ErrStaticMoving = errors.New("pointer kept moving while the static layout followed it")
)

// The headers the layout's objects answer HTTP GETs with where the store
// keeps headers: catalogd's Content-Type, and the encoding of the
// pre-compressed variant.
var (
	// JSONLHeaders are catalog.jsonl's and api/v1/all's.
	JSONLHeaders = storage.Headers{ContentType: "application/jsonl"}
	// GzipHeaders are catalog.jsonl.gz's and api/v1/all.gz's.
	GzipHeaders = storage.Headers{ContentType: "application/jsonl", ContentEncoding: "gzip"}
)

// StaticKeys returns the keys of name's static layout: /api/v1/all and
// its gzip variant. name must be valid (ValidName).
func StaticKeys(name string) (all, gz string) {
	return catalogPrefix(name) + staticAll, catalogPrefix(name) + staticGzip
}

// StaticState is catalogs/<name>/static: the digest the layout's objects
// were last copied from, and their ETags then.
type StaticState struct {
	Digest   string    `json:"digest"`
	AllETag  string    `json:"allETag"`
	GzipETag string    `json:"gzipETag"`
	Time     time.Time `json:"time"`
}

// Static makes a Writer write content for the static layout: catalog.jsonl
// whole with its Content-Type, whatever ShareFrom says.
func Static() WriterOption { return func(w *Writer) { w.static = true } }

// WriteStatic stores the gzip of the complete content of name at digest
// beside it, once: PublishStatic copies it to api/v1/all.gz. Memory stays
// that of the compressor whatever the size.
func WriteStatic(ctx context.Context, s storage.Store, name, digest string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkDigest(digest); err != nil {
		return err
	}
	m, err := readMeta(ctx, s, name, digest)
	if errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("catalog: static %s at %s: %w", name, digest, ErrIncomplete)
	}
	if err != nil {
		return err
	}
	return ensureGzip(ctx, s, m)
}

func ensureGzip(ctx context.Context, s storage.Store, m Meta) error {
	key := contentPrefix(m.Name, m.Digest) + gzipFile
	if _, err := s.Stat(ctx, key); err == nil {
		return nil
	} else if !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("catalog: static %s: %w", key, err)
	}
	rc, err := openContent(ctx, s, m, 0, m.Size)
	if err != nil {
		return fmt.Errorf("catalog: static %s: %w", key, err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() {
		z := gzip.NewWriter(pw)
		_, err := io.Copy(z, rc)
		if cerr := z.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	_, err = storage.PutHeaders(ctx, s, key, pr, GzipHeaders)
	pr.CloseWithError(io.ErrClosedPipe) // stops the compressor if Put gave up
	if err != nil {
		return fmt.Errorf("catalog: static %s: %w", key, err)
	}
	return nil
}

// PublishStatic makes name's static layout hold its published content:
// api/v1/all and api/v1/all.gz become copies of the current digest's
// objects, then the pointer is read again and the copies repeated while it
// moved (a publisher racing this one), at most staticRounds times. It does
// nothing when the layout holds the current digest already, so calling it
// after every sync costs a pointer read and three small requests. It
// returns the digest the layout holds. A failure leaves what readers had:
// each object is replaced whole or not at all.
func PublishStatic(ctx context.Context, s storage.Store, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	done := ""
	for range staticRounds {
		p, _, err := Current(ctx, s, name)
		if err != nil {
			return done, err
		}
		if p.Digest == done {
			return done, nil
		}
		if err := copyStatic(ctx, s, name, p.Digest); err != nil {
			return done, err
		}
		done = p.Digest
	}
	return done, fmt.Errorf("catalog: static %s: %w", name, ErrStaticMoving)
}

// copyStatic copies digest's objects to the layout unless its state says
// they are there (and their ETags agree), then records the state.
func copyStatic(ctx context.Context, s storage.Store, name, digest string) error {
	all, gz := StaticKeys(name)
	if st, err := ReadStatic(ctx, s, name); err == nil && st.Digest == digest && sameETag(ctx, s, all, st.AllETag) && sameETag(ctx, s, gz, st.GzipETag) {
		return nil
	}
	m, err := readMeta(ctx, s, name, digest)
	if errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("catalog: static %s at %s: %w", name, digest, ErrIncomplete)
	}
	if err != nil {
		return err
	}
	if err := ensureGzip(ctx, s, m); err != nil {
		return err
	}
	allIn, err := copyAll(ctx, s, m, all)
	if err != nil {
		return fmt.Errorf("catalog: static %s: %w", all, err)
	}
	gzIn, err := storage.Copy(ctx, s, gz, contentPrefix(name, digest)+gzipFile, GzipHeaders)
	if err != nil {
		return fmt.Errorf("catalog: static %s: %w", gz, err)
	}
	b, err := json.Marshal(StaticState{Digest: digest, AllETag: allIn.ETag, GzipETag: gzIn.ETag, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	if _, err := s.Put(ctx, catalogPrefix(name)+staticMarker, bytes.NewReader(append(b, '\n'))); err != nil {
		return fmt.Errorf("catalog: static %s: %w", name, err)
	}
	return nil
}

// copyAll copies catalog.jsonl to key; content written before the layout
// was on may be shared extents, which are streamed there instead.
func copyAll(ctx context.Context, s storage.Store, m Meta, key string) (storage.Info, error) {
	if m.Format != sharedFormat {
		return storage.Copy(ctx, s, key, contentPrefix(m.Name, m.Digest)+contentFile, JSONLHeaders)
	}
	rc, err := openContent(ctx, s, m, 0, m.Size)
	if err != nil {
		return storage.Info{}, err
	}
	defer rc.Close()
	return storage.PutHeaders(ctx, s, key, rc, JSONLHeaders)
}

func sameETag(ctx context.Context, s storage.Store, key, etag string) bool {
	in, err := s.Stat(ctx, key)
	return err == nil && etag != "" && in.ETag == etag
}

// ReadStatic returns name's static state: which digest its layout holds.
// A layout never written is an error wrapping storage.ErrNotExist.
func ReadStatic(ctx context.Context, s storage.Store, name string) (StaticState, error) {
	if err := checkName(name); err != nil {
		return StaticState{}, err
	}
	var st StaticState
	if _, err := readControl(ctx, s, catalogPrefix(name)+staticMarker, &st); err != nil {
		return StaticState{}, err
	}
	return st, nil
}
