// Package catalog is the published catalog format in a storage.Store: the
// writer that stores a File-Based Catalog, the pointer that publishes it,
// and the reader the HTTP server answers catalogd's /all and /metas from.
//
// Layout, for a catalog name (a DNS-1123 subdomain) and an image digest:
//
//	catalogs/<name>/<alg>-<hex>/catalog.jsonl  every FBC object, one JSON line each
//	catalogs/<name>/<alg>-<hex>/index          byte ranges by schema, package, name
//	catalogs/<name>/<alg>-<hex>/graphql-schema.json  fields seen per schema, for GraphQL
//	catalogs/<name>/<alg>-<hex>/files          the per-file summary a later sync reuses
//	catalogs/<name>/<alg>-<hex>/meta.json      written last: the content is complete
//	catalogs/<name>/current                    the pointer to the published digest
//	catalogs/<name>/lastpoll                   the last poll, changed or not
//	catalogs/<name>/api/v1/all, all.gz, static the static read layout (static.go)
//
// Content is addressed by the image digest and never changes once its
// meta.json exists; publishing is a compare-and-swap of the small pointer.
// Content written with ShareFrom has delta.jsonl (its own lines) instead of
// catalog.jsonl, which its meta.json describes as extents (extents.go).
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

var (
	// ErrInvalidName is returned for a catalog name that is not a DNS-1123
	// subdomain.
	ErrInvalidName = errors.New("invalid catalog name")
	// ErrInvalidDigest is returned for a digest that is not
	// "sha256:<64 hex>" or "sha512:<128 hex>".
	ErrInvalidDigest = errors.New("invalid digest")
	// ErrInvalidLine is returned by Writer.Add for a line that is not
	// exactly one "\n"-terminated line.
	ErrInvalidLine = errors.New("invalid catalog line")
	// ErrInvalidPointer is returned by Publish for a pointer missing its
	// resolution time.
	ErrInvalidPointer = errors.New("invalid pointer")
	// ErrIncomplete is returned when content has no meta.json: it is being
	// written, was aborted, or its writer died.
	ErrIncomplete = errors.New("catalog content incomplete")
	// ErrStale is returned by Publish when the current pointer was resolved
	// later than the one offered.
	ErrStale = errors.New("newer catalog already published")
	// ErrCorrupt is returned when stored metadata does not parse or does
	// not agree with itself.
	ErrCorrupt = errors.New("catalog data corrupt")
	// ErrFormat is returned for an index or meta of a format version this
	// code does not know.
	ErrFormat = errors.New("unsupported catalog format version")
	// ErrClosed is returned by a Writer used after Commit or Abort.
	ErrClosed = errors.New("catalog writer closed")
)

// metaFormat is the version of the layout and meta.json.
const metaFormat = 1

// Meta is meta.json: the description of complete content.
type Meta struct {
	Format int    `json:"format"`
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// Ref is the image reference the content was pulled from.
	Ref     string `json:"ref,omitempty"`
	Objects int    `json:"objects"`
	// Size is the byte size of catalog.jsonl; SHA256 its hex sha256, ""
	// for shared content (format 2), which never reads the bytes it shares.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Extents is where catalog.jsonl lies in format 2 (see ShareFrom).
	Extents []Extent `json:"extents,omitempty"`
	// IndexSize is the byte size of the index, so a reader can fetch it
	// into one exactly sized buffer.
	IndexSize int64 `json:"indexSize"`
	// GraphQLSize is the byte size of graphql-schema.json; 0 for content
	// written before it existed.
	GraphQLSize int64 `json:"graphqlSize,omitempty"`
	// FilesSize is the byte size of the per-file summary a later sync
	// reuses (see SetFiles); 0 when the content has none.
	FilesSize int64          `json:"filesSize,omitempty"`
	Schemas   map[string]int `json:"schemas"`
	Created   time.Time      `json:"created"`
	// Stats is free-form, for timings and the like.
	Stats map[string]any `json:"stats,omitempty"`
	// VerifiedBy says what verified the image's signature when the
	// signature policy required one (no key material, no secret); empty
	// otherwise and in content written before it existed.
	VerifiedBy string `json:"verifiedBy,omitempty"`
}

// HasContent reports whether the content of name at digest is complete: its
// meta.json exists, parses and describes that digest. A missing or
// unusable meta.json is (Meta{}, false, nil), meaning "write it (again)";
// errors are store failures only.
func HasContent(ctx context.Context, s storage.Store, name, digest string) (Meta, bool, error) {
	if err := checkName(name); err != nil {
		return Meta{}, false, err
	}
	if err := checkDigest(digest); err != nil {
		return Meta{}, false, err
	}
	m, err := readMeta(ctx, s, name, digest)
	switch {
	case errors.Is(err, storage.ErrNotExist), errors.Is(err, ErrCorrupt), errors.Is(err, ErrFormat):
		return Meta{}, false, nil
	case err != nil:
		return Meta{}, false, err
	}
	return m, true, nil
}

func readMeta(ctx context.Context, s storage.Store, name, digest string) (Meta, error) {
	key := contentPrefix(name, digest) + metaFile
	b, err := readSmall(ctx, s, key)
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("catalog: %s: %w: %v", key, ErrCorrupt, err)
	}
	switch {
	case m.Format != metaFormat && m.Format != sharedFormat:
		return Meta{}, fmt.Errorf("catalog: %s: format %d: %w", key, m.Format, ErrFormat)
	case m.Format == metaFormat && len(m.Extents) > 0:
		return Meta{}, fmt.Errorf("catalog: %s: extents in format %d: %w", key, m.Format, ErrCorrupt)
	case m.Format == sharedFormat:
		if err := checkExtents(m); err != nil {
			return Meta{}, fmt.Errorf("catalog: %s: %s: %w", key, err, ErrCorrupt)
		}
	}
	if m.Digest != digest || m.Name != name || m.Size < 0 || m.Objects < 0 ||
		m.IndexSize < indexHeader+4 || m.IndexSize > maxIndex {
		return Meta{}, fmt.Errorf("catalog: %s describes %s %s: %w", key, m.Name, m.Digest, ErrCorrupt)
	}
	return m, nil
}

// maxIndex bounds the index a reader loads; 15k objects take 0.6 MB.
const maxIndex = 1 << 30

// maxSmall bounds what readSmall accepts: pointers and meta are a few
// hundred bytes, so anything near this is not ours.
const maxSmall = 1 << 20

// readSmall reads a whole small object.
func readSmall(ctx context.Context, s storage.Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key, 0, maxSmall+1)
	if err != nil {
		return nil, err
	}
	return readAllSmall(rc, key)
}

// readAllSmall reads and closes rc, opened for at most maxSmall+1 bytes.
func readAllSmall(rc io.ReadCloser, key string) ([]byte, error) {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("catalog: read %s: %w", key, err)
	}
	if len(b) > maxSmall {
		return nil, fmt.Errorf("catalog: %s larger than %d bytes: %w", key, maxSmall, ErrCorrupt)
	}
	return b, nil
}
