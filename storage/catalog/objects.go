package catalog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
)

// graphqlFile holds the GraphQL shape discovered while indexing.
const graphqlFile = "graphql-schema.json"

// ErrNoGraphQL is returned by Catalog.GraphQLShape for content written
// before the shape was stored beside it.
var ErrNoGraphQL = errors.New("catalog has no stored graphql schema")

// putGraphQL stores the discovered shape and returns its size.
func (w *Writer) putGraphQL(ctx context.Context) (int64, error) {
	b, err := w.gql.Shape().Marshal()
	if err != nil {
		return 0, fmt.Errorf("catalog: graphql schema: %w", err)
	}
	if _, err := w.store.Put(ctx, w.prefix+graphqlFile, bytes.NewReader(b)); err != nil {
		return 0, fmt.Errorf("catalog: writing graphql schema: %w", err)
	}
	return int64(len(b)), nil
}

// GraphQLShape reads the shape stored with the content: ErrNoGraphQL for
// content older than it.
func (c *Catalog) GraphQLShape(ctx context.Context) (*gqlshape.Shape, error) {
	if c.Meta.GraphQLSize <= 0 {
		return nil, fmt.Errorf("catalog: %s at %s: %w", c.Name, c.Meta.Digest, ErrNoGraphQL)
	}
	key := contentPrefix(c.Name, c.Meta.Digest) + graphqlFile
	rc, err := c.store.Get(ctx, key, 0, c.Meta.GraphQLSize)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("catalog: %s at %s: graphql schema missing: %w", c.Name, c.Meta.Digest, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %s graphql schema: %w", c.Name, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("catalog: %s graphql schema: %w", c.Name, err)
	}
	if int64(buf.Len()) != c.Meta.GraphQLSize {
		return nil, fmt.Errorf("catalog: %s graphql schema is not the %d bytes meta says: %w", c.Name, c.Meta.GraphQLSize, ErrCorrupt)
	}
	s, err := gqlshape.Unmarshal(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: %w: %v", c.Name, ErrCorrupt, err)
	}
	return s, nil
}

// DiscoverGraphQL builds the shape by reading the whole catalog once, for
// content stored before the shape was: memory stays that of one line.
func (c *Catalog) DiscoverGraphQL(ctx context.Context) (*gqlshape.Shape, error) {
	s := gqlshape.New()
	rc, err := c.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", c.where, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	x := c.idx
	buf := make([]byte, 0, 64<<10)
	for _, e := range x.entries {
		if cap(buf) < int(e.n) {
			buf = make([]byte, e.n)
		}
		b := buf[:e.n]
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, c.readErr(err)
		}
		s.Observe(x.strs[e.schema], b)
	}
	return s, ctx.Err()
}

// MaxLines bounds what one Lines call returns.
const MaxLines = 1000

// Lines returns the lines of the objects matching q, in catalog order,
// skipping the first offset matches and returning at most limit
// (MaxLines at most). Only those objects' byte ranges are read; ranges
// closer than ReadGap (or 64 KB, whichever is larger) share one read.
func (c *Catalog) Lines(ctx context.Context, q Query, offset, limit int) ([][]byte, error) {
	spans := c.idx.page(q, max(offset, 0), min(max(limit, 0), MaxLines))
	if len(spans) == 0 {
		return nil, nil
	}
	gap := max(c.ReadGap, 64<<10)
	var out [][]byte
	for len(spans) > 0 {
		k := 1
		for k < len(spans) && spans[k].off-(spans[k-1].off+spans[k-1].n) <= gap {
			k++
		}
		var buf bytes.Buffer
		if err := c.fetchGroup(ctx, &buf, spans[:k]); err != nil {
			return nil, err
		}
		b := buf.Bytes()
		for _, s := range spans[:k] {
			out = append(out, b[:s.n:s.n])
			b = b[s.n:]
		}
		spans = spans[k:]
	}
	return out, nil
}

// page returns the spans of the matches of q from offset, at most limit,
// one per object.
func (x *index) page(q Query, offset, limit int) []span {
	sid, sAny, sOK := x.lookup(q.Schema)
	pid, pAny, pOK := x.lookup(q.Package)
	nid, nAny, nOK := x.lookup(q.Name)
	if !sOK || !pOK || !nOK || limit == 0 {
		return nil
	}
	x.once.Do(x.build)
	cand, all := x.candidates([3]uint32{sid, pid, nid}, [3]bool{sAny, pAny, nAny})
	n := len(cand)
	if all {
		n = len(x.entries)
	}
	var out []span
	for k := 0; k < n && len(out) < limit; k++ {
		i := k
		if !all {
			i = int(cand[k])
		}
		e := &x.entries[i]
		if !sAny && e.schema != sid || !pAny && e.pkg != pid || !nAny && e.name != nid {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		out = append(out, span{x.offs[i], int64(e.n)})
	}
	return out
}

// candidates is the shortest posting list among the fields asked for, or
// all (true) when none is.
func (x *index) candidates(ids [3]uint32, anys [3]bool) ([]int32, bool) {
	var cand []int32
	all := true
	for f := range ids {
		if anys[f] {
			continue
		}
		if l := x.postings[f][ids[f]]; all || len(l) < len(cand) {
			cand, all = l, false
		}
	}
	return cand, all
}
