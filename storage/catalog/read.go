package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/catalogsync/catalogsync/storage"
)

// Query selects objects as catalogd's /api/v1/metas does: each non-empty
// field must equal the object's, empty fields match anything.
type Query struct {
	Schema, Package, Name string
}

// Catalog is a published catalog's content, opened from the store and
// ready to answer queries: what was synced, not what to sync (that is
// sync/catalogspec.Catalog). It is immutable and safe for concurrent use;
// the index is held in memory.
type Catalog struct {
	Name string
	// Pointer is the pointer Open followed (zero after OpenDigest).
	Pointer Pointer
	Meta    Meta
	// ReadGap lets Query fetch matches separated by at most ReadGap
	// unmatched bytes with one ranged Get, dropping the gap: on S3 one
	// request costs more than a few KB. 0 reads exactly the matches. Set
	// it before sharing the Catalog.
	ReadGap int64

	store storage.Store
	// where names the content in errors: its catalog.jsonl, or for shared
	// content its delta.jsonl and the lines it shares.
	where string
	idx   *index
}

// Open opens the catalog name's published content: it follows the current
// pointer and loads meta.json and the index, never catalog.jsonl. A never
// published catalog is an error wrapping storage.ErrNotExist.
func Open(ctx context.Context, s storage.Store, name string) (*Catalog, error) {
	p, _, err := Current(ctx, s, name)
	if err != nil {
		return nil, err
	}
	c, err := OpenDigest(ctx, s, name, p.Digest)
	if err != nil {
		return nil, err
	}
	c.Pointer = p
	return c, nil
}

// OpenDigest opens the complete content of name at digest, published or
// not.
func OpenDigest(ctx context.Context, s storage.Store, name, digest string) (*Catalog, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	m, err := readMeta(ctx, s, name, digest)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("catalog: %s at %s: %w", name, digest, ErrIncomplete)
	}
	if err != nil {
		return nil, err
	}
	prefix := contentPrefix(name, digest)
	rc, err := s.Get(ctx, prefix+indexFile, 0, m.IndexSize+1)
	if errors.Is(err, storage.ErrNotExist) {
		// Not "never published": meta.json promised an index.
		return nil, fmt.Errorf("catalog: %s at %s: index missing: %w", name, digest, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %s index: %w", name, err)
	}
	// One byte more than expected, to notice an index longer than meta
	// says.
	b := make([]byte, m.IndexSize+1)
	n, err := io.ReadFull(rc, b)
	rc.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("catalog: %s index: %w", name, err)
	}
	if int64(n) != m.IndexSize {
		return nil, fmt.Errorf("catalog: %s at %s: index is not the %d bytes meta says: %w", name, digest, m.IndexSize, ErrCorrupt)
	}
	idx, err := parseIndex(b[:n])
	if err != nil {
		return nil, err
	}
	if idx.size != m.Size || len(idx.entries) != m.Objects {
		return nil, fmt.Errorf("catalog: %s at %s: index has %d objects in %d bytes, meta %d in %d: %w",
			name, digest, len(idx.entries), idx.size, m.Objects, m.Size, ErrCorrupt)
	}
	where := prefix + contentFile
	if m.Format == sharedFormat {
		where = prefix + deltaFile + " and the lines it shares"
	}
	return &Catalog{Name: name, Meta: m, store: s, where: where, idx: idx}, nil
}

// All returns the whole catalog.jsonl (Meta.Size bytes).
func (c *Catalog) All(ctx context.Context) (io.ReadCloser, error) {
	return c.OpenRange(ctx, 0, c.Meta.Size)
}

// OpenRange returns n bytes of catalog.jsonl from off, which must lie
// within Meta.Size. A missing object is an error of OpenRange, not of the
// first Read, so a server can still answer with an error status.
func (c *Catalog) OpenRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return openContent(ctx, c.store, c.Meta, off, n)
}

// Count returns how many objects and bytes Query would write for q, from
// the index alone (for Content-Length, or a 404 on no match).
func (c *Catalog) Count(q Query) (objects int, bytes int64) {
	spans, objects := c.idx.match(q)
	for _, s := range spans {
		bytes += s.n
	}
	return objects, bytes
}

// Query writes the lines of the objects matching q to w, in catalog order.
// It reads only the matching byte ranges of catalog.jsonl (with ReadGap,
// plus gaps up to that size), one ranged Get per run of adjacent matches.
func (c *Catalog) Query(ctx context.Context, w io.Writer, q Query) error {
	spans, _ := c.idx.match(q)
	var groups [][]span
	for len(spans) > 0 {
		// One fetch covers spans whose gaps are within ReadGap.
		k := 1
		for k < len(spans) && spans[k].off-(spans[k-1].off+spans[k-1].n) <= c.ReadGap {
			k++
		}
		groups = append(groups, spans[:k])
		spans = spans[k:]
	}
	if len(groups) == 1 {
		return c.fetchGroup(ctx, w, groups[0])
	}
	return c.fetchParallel(ctx, w, groups)
}

// Scattered matches (one package object per package, say) would cost a
// round trip each against object storage: small runs are fetched ahead,
// a few at a time, and written in order. Large runs stream in turn.
const (
	prefetchRuns    = 8
	prefetchMaxSize = 1 << 20
)

type prefetch struct {
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

func (c *Catalog) fetchParallel(ctx context.Context, w io.Writer, groups [][]span) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, prefetchRuns)
	ahead := make([]*prefetch, len(groups))
	ready := make(chan int, len(groups)) // group indexes, in order, once launched (or large)
	go func() {
		defer close(ready)
		for i, g := range groups {
			if groupSize(g) > prefetchMaxSize {
				ready <- i
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			pf := &prefetch{done: make(chan struct{})}
			ahead[i] = pf
			go func() {
				defer close(pf.done)
				pf.err = c.fetchGroup(ctx, &pf.buf, g)
			}()
			ready <- i
		}
	}()
	for i := range ready {
		pf := ahead[i]
		if pf == nil {
			if err := c.fetchGroup(ctx, w, groups[i]); err != nil {
				return err
			}
			continue
		}
		<-pf.done
		<-slots
		if pf.err != nil {
			return pf.err
		}
		if _, err := w.Write(pf.buf.Bytes()); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func groupSize(g []span) int64 {
	last := g[len(g)-1]
	return last.off + last.n - g[0].off
}

func (c *Catalog) fetchGroup(ctx context.Context, w io.Writer, g []span) error {
	start, last := g[0].off, g[len(g)-1]
	return c.fetch(ctx, w, start, last.off+last.n-start, g)
}

func (c *Catalog) fetch(ctx context.Context, w io.Writer, off, n int64, spans []span) error {
	rc, err := openContent(ctx, c.store, c.Meta, off, n)
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", c.where, err)
	}
	defer rc.Close()
	pos := off
	for _, s := range spans {
		if gap := s.off - pos; gap > 0 {
			if _, err := io.CopyN(io.Discard, rc, gap); err != nil {
				return c.readErr(err)
			}
		}
		if _, err := io.CopyN(w, rc, s.n); err != nil {
			return c.readErr(err)
		}
		pos = s.off + s.n
	}
	return nil
}

func (c *Catalog) readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("catalog: %s shorter than its index: %w", c.where, ErrCorrupt)
	}
	return fmt.Errorf("catalog: %s: %w", c.where, err)
}
