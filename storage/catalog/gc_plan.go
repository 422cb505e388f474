package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// gcCandidate is non-current complete content under consideration.
type gcCandidate struct {
	name    string
	dir     *gcDir
	created time.Time
	since   time.Time
	reason  GCReason
	evict   bool
}

// configured returns the listed catalogs as a set, nil when every catalog
// counts as listed (no list given, or an empty one: see GCOptions).
func (r *gcRun) configured() map[string]bool {
	switch {
	case r.o.Catalogs != nil && len(r.o.Catalogs) == 0:
		r.problem("the catalog list is empty: no catalog deleted for being unconfigured")
	case r.o.Catalogs != nil:
		configured := map[string]bool{}
		for _, n := range r.o.Catalogs {
			configured[n] = true
		}
		return configured
	}
	return nil
}

// plan decides, catalog by catalog, what goes and what stays, queueing
// the deletes; it returns the keys whose leftovers to look for.
func (r *gcRun) plan(ctx context.Context, cats map[string]*gcCatalog) (hints []string, err error) {
	configured := r.configured()
	var pool []*gcCandidate
	for _, name := range gcSortedKeys(cats) {
		c := cats[name]
		if !ValidName(name) {
			r.problem("%s: not a catalog name, left alone", keyRoot+name)
			continue
		}
		for dir := range c.dirs {
			p := catalogPrefix(name) + dir + "/"
			hints = append(hints, p+contentFile, p+deltaFile, p+indexFile, p+graphqlFile, p+filesFile, p+gzipFile)
		}
		all, gz := StaticKeys(name)
		hints = append(hints, all, gz)
		if configured != nil && !configured[name] {
			r.planRemoval(c)
			continue
		}
		cands, err := r.planCatalog(ctx, c)
		if err != nil {
			return nil, err
		}
		pool = append(pool, r.planAge(cands)...)
	}
	r.capSize(pool)
	return hints, nil
}

// planAge keeps the newest r.keepNewest candidates and those in grace (the size
// cap may still take them, so they are returned as its pool); older ones
// go.
func (r *gcRun) planAge(cands []*gcCandidate) (pool []*gcCandidate) {
	for i, cd := range cands {
		switch {
		case i < r.keepNewest:
			cd.reason = GCRecent
			pool = append(pool, cd)
		case r.pastGrace(cd.since):
			r.planContent(cd, GCOld)
		default:
			cd.reason = GCInGrace
			pool = append(pool, cd)
		}
	}
	return pool
}

func (r *gcRun) pastGrace(since time.Time) bool { return r.now.Sub(since) >= r.grace }

// planRemoval deletes a catalog that is no longer configured, once none of
// its objects was written for the unconfigured age: the pointer first, so
// no new reader finds it, then content, meta.json of each digest first.
func (r *gcRun) planRemoval(c *gcCatalog) {
	it := GCItem{Catalog: c.name, Keys: gcKeys(c.all), Bytes: c.bytes, InactiveSince: c.newest}
	if r.now.Sub(c.newest) < r.unconfigured {
		it.Reason = GCRecentlyUsed
		r.keep(it)
		return
	}
	it.Reason = GCRemovedCatalog
	order := slices.Clone(c.all)
	rank := func(k string) int {
		switch {
		case strings.HasSuffix(k, "/"+currentFile):
			return 0
		case strings.HasSuffix(k, "/"+metaFile):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(order, func(a, b storage.Info) int { return rank(a.Key) - rank(b.Key) })
	r.deletes = append(r.deletes, func(ctx context.Context) error {
		if !r.o.DryRun {
			for _, in := range order {
				if err := r.s.Delete(ctx, in.Key); err != nil {
					return fmt.Errorf("catalog: gc: %w", err)
				}
			}
		}
		r.deleted(it)
		return nil
	})
}

// planCatalog plans the incomplete content of a configured catalog and
// returns its non-current complete content, newest first, for the caller
// to apply Keep.
func (r *gcRun) planCatalog(ctx context.Context, c *gcCatalog) ([]*gcCandidate, error) {
	cur, swap, ok, err := r.current(ctx, c)
	if !ok || err != nil {
		return nil, err
	}
	var cands []*gcCandidate
	for _, dir := range gcSortedKeys(c.dirs) {
		cd, err := r.candidate(ctx, c, c.dirs[dir], cur.Digest, swap)
		if err != nil {
			return nil, err
		}
		if cd != nil {
			cands = append(cands, cd)
		}
	}
	slices.SortFunc(cands, func(a, b *gcCandidate) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(a.dir.digest, b.dir.digest)
	})
	return cands, nil
}

// current reads c's pointer now, not from the listing (it may have been
// published or swapped since), and the time of its last swap; ok is false
// when the catalog is to be left alone.
func (r *gcRun) current(ctx context.Context, c *gcCatalog) (cur Pointer, swap time.Time, ok bool, err error) {
	p, etag, err := Current(ctx, r.s, c.name)
	switch {
	case err == nil:
		cur = p
		if swap, err = r.swapTime(ctx, c.name, etag); err != nil {
			return cur, swap, false, err
		}
	case errors.Is(err, storage.ErrNotExist):
		if c.current != nil {
			// Deleted since the listing (another GC removing the
			// catalog): count it as swapped just now.
			swap = r.now
		}
	case errors.Is(err, ErrCorrupt):
		r.problem("%s: unreadable pointer, catalog left alone: %v", c.name, err)
		return cur, swap, false, nil
	default:
		return cur, swap, false, fmt.Errorf("catalog: gc: %w", err)
	}
	if st, err := ReadStatic(ctx, r.s, c.name); err == nil && ValidDigest(st.Digest) && st.Digest != cur.Digest {
		// A publisher racing another copied it last: readers told by
		// the state may still open its objects.
		r.static[c.name] = st.Digest
	} else if err != nil && !errors.Is(err, storage.ErrNotExist) && !errors.Is(err, ErrCorrupt) {
		return cur, swap, false, fmt.Errorf("catalog: gc: %w", err)
	}
	if cur.Digest != "" {
		if _, ok := c.dirs[digestDir(cur.Digest)]; !ok {
			// Perhaps written after the listing: look again.
			if m, ok, err := HasContent(ctx, r.s, c.name, cur.Digest); err != nil {
				return cur, swap, false, fmt.Errorf("catalog: gc: %w", err)
			} else if !ok {
				r.problem("%s: current pointer names %s, which has no complete content", c.name, cur.Digest)
			} else {
				r.addSources(c.name, cur.Digest, m.Sources())
				r.roots = append(r.roots, [2]string{c.name, cur.Digest})
			}
		}
	}
	return cur, swap, true, nil
}

// candidate plans d, one digest of c: the current one and what cannot be
// judged are kept, incomplete content goes once out of grace, and complete
// content is returned as a candidate for the age and size rules.
func (r *gcRun) candidate(ctx context.Context, c *gcCatalog, d *gcDir, current string, swap time.Time) (*gcCandidate, error) {
	it := GCItem{Catalog: c.name, Digest: d.digest, Keys: gcKeys(d.objs), Bytes: d.bytes}
	if d.digest == current {
		it.Reason = GCCurrent
		r.keep(it)
		return nil, r.readSources(ctx, c.name, d.digest)
	}
	it.InactiveSince = gcLater(swap, d.newest)
	complete := d.metaKey != ""
	var m Meta
	if complete {
		var err error
		m, err = readMeta(ctx, r.s, c.name, d.digest)
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrNotExist):
			// meta.json went since the listing: someone else is
			// deleting it.
			return nil, nil
		case errors.Is(err, ErrFormat):
			it.Reason = GCUnknownFormat
			r.keep(it)
			return nil, nil
		case errors.Is(err, ErrCorrupt):
			complete = false // as HasContent sees it: to be written again
		default:
			return nil, fmt.Errorf("catalog: gc: %w", err)
		}
	}
	if !complete {
		// Incomplete content is inactive since its last write, pointer
		// or not: no reader can open it.
		it.InactiveSince = d.newest
		if r.pastGrace(d.newest) {
			r.planDelete(c.name, d, it, GCIncomplete)
		} else {
			it.Reason = GCWriting
			r.keep(it)
		}
		return nil, nil
	}
	r.addSources(c.name, d.digest, m.Sources())
	created := m.Created
	if created.IsZero() {
		created = d.metaMod
	}
	return &gcCandidate{name: c.name, dir: d, created: created, since: it.InactiveSince}, nil
}

// swapTime is when the pointer version with etag was written: the last
// swap. A pointer changed again since it was read was swapped just now.
func (r *gcRun) swapTime(ctx context.Context, name, etag string) (time.Time, error) {
	key := catalogPrefix(name) + currentFile
	// A listing, not Stat: S3 lists modification times in milliseconds,
	// HEAD gives whole seconds.
	list, err := r.s.List(ctx, key)
	if err != nil {
		return time.Time{}, fmt.Errorf("catalog: gc: %w", err)
	}
	for _, in := range list {
		if in.Key == key && in.ETag == etag {
			return in.ModTime, nil
		}
	}
	return r.now, nil
}

func (cd *gcCandidate) item() GCItem {
	return GCItem{Catalog: cd.name, Digest: cd.dir.digest, Keys: gcKeys(cd.dir.objs), Bytes: cd.dir.bytes,
		Created: cd.created, InactiveSince: cd.since}
}

func (r *gcRun) planContent(cd *gcCandidate, reason GCReason) {
	r.planDelete(cd.name, cd.dir, cd.item(), reason)
}

// capSize keeps what pool holds unless its bytes exceed MaxInactiveBytes,
// in which case the least recent content out of grace goes first.
func (r *gcRun) capSize(pool []*gcCandidate) {
	var total int64
	for _, cd := range pool {
		total += cd.dir.bytes
	}
	if r.o.MaxInactiveBytes > 0 && total > r.o.MaxInactiveBytes {
		lru := slices.Clone(pool)
		slices.SortStableFunc(lru, func(a, b *gcCandidate) int { return a.created.Compare(b.created) })
		for _, cd := range lru {
			if total <= r.o.MaxInactiveBytes {
				break
			}
			if r.pastGrace(cd.since) {
				cd.evict = true
				total -= cd.dir.bytes
			}
		}
		if total > r.o.MaxInactiveBytes {
			r.problem("inactive content is %d bytes, over the cap of %d: the rest is within the grace period", total, r.o.MaxInactiveBytes)
		}
	}
	r.rep.InactiveBytes = total
	for _, cd := range pool {
		if cd.evict {
			r.planContent(cd, GCOverSize)
			continue
		}
		it := cd.item()
		it.Reason = cd.reason
		r.keep(it)
	}
}
