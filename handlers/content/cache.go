package content

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// cache keeps opened catalogs, least recently used first out, within a
// byte budget.
//
// Validity: an entry remembers the ETag of the pointer it was opened from
// (read before the pointer's content, so never newer than it). It is served
// without a store access for ttl after the check that last confirmed it
// started; then one Stat of the pointer either confirms the ETag or leads
// to a reopen. Content under a digest never changes, so the pointer is the
// only thing that can go stale. A publish completed at t is therefore seen
// by every request starting after t+ttl, on every replica, except a request
// that joins a check already in flight, which sees what that check reads.
// A check that fails (the store unreachable) keeps serving the entry for
// another ttl: what was served stays served through a store outage, as far
// as its content is in the response cache or readable.
type cache struct {
	store   storage.Store
	max     int64
	ttl     time.Duration
	readGap int64

	mu      sync.Mutex
	entries *weighted[string, *entry] // weighed by footprint

	// missing remembers names found unpublished, for ttl: requests for
	// a catalog that does not exist (yet) cost one store read per ttl,
	// not one each. Bounded in entries; names are at most 253 bytes.
	missing *expirable.LRU[string, struct{}]

	// flights collapses concurrent checks and opens of one catalog.
	flights singleflight.Group
	// onStale is told when a cached catalog is served because its
	// pointer could not be checked.
	onStale func(name string, err error)
}

type entry struct {
	name string
	cat  *catalog.Catalog
	etag string // of the pointer cat was opened from
	size int64
	// checked is when (unix ns) the latest pointer check that confirmed
	// etag started.
	checked atomic.Int64
}

// missingEntries bounds the names remembered as unpublished.
const missingEntries = 4096

func newCache(s storage.Store, max int64, ttl time.Duration, readGap int64) *cache {
	c := &cache{store: s, max: max, ttl: ttl, readGap: readGap,
		entries: newWeighted[string](max, func(e *entry) int64 { return e.size })}
	if ttl > 0 {
		c.missing = expirable.NewLRU[string, struct{}](missingEntries, nil, ttl)
	}
	return c
}

// footprint estimates an opened catalog's memory: the index's string table
// (about the index file's size) plus a 16-byte entry per object and a
// string header per distinct string, at most one per object.
func footprint(c *catalog.Catalog) int64 {
	return c.Meta.IndexSize + 32*int64(c.Meta.Objects) + 1024
}

func (c *cache) fresh(e *entry, now time.Time) bool {
	return c.ttl > 0 && now.UnixNano()-e.checked.Load() < int64(c.ttl)
}

func (c *cache) lookup(name string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.entries.get(name)
	return e
}

// get returns name's published catalog, from the cache when it is fresh.
func (c *cache) get(ctx context.Context, name string) (*catalog.Catalog, error) {
	if e := c.lookup(name); e != nil && c.fresh(e, time.Now()) {
		return e.cat, nil
	}
	if c.missing != nil && c.missing.Contains(name) {
		return nil, fmt.Errorf("catalog %s: %w (recently)", name, storage.ErrNotExist)
	}
	ch := c.flights.DoChan(name, func() (any, error) {
		// Detached from the request: others wait on this result, so one
		// client going away must not fail them all.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		return c.load(fctx, name)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*catalog.Catalog), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load revalidates or (re)opens name's catalog.
func (c *cache) load(ctx context.Context, name string) (*catalog.Catalog, error) {
	// The check's start, not its end, opens the validity window: the
	// pointer may change while it runs.
	start := time.Now()
	e := c.lookup(name)
	if e != nil {
		if c.fresh(e, start) {
			// Confirmed by the flight that just ended.
			return e.cat, nil
		}
		st, err := c.store.Stat(ctx, catalog.PointerKey(name))
		switch {
		case errors.Is(err, storage.ErrNotExist):
			c.remove(name, e.cat)
			if c.missing != nil {
				c.missing.Add(name, struct{}{})
			}
			return nil, err
		case err != nil:
			// The store is unreachable: keep serving what was served
			// (stale-if-error) and check again after another ttl, rather
			// than failing every request or hammering the store.
			e.checked.Store(start.UnixNano())
			if c.onStale != nil {
				c.onStale(name, err)
			}
			return e.cat, nil
		case st.ETag == e.etag:
			e.checked.Store(start.UnixNano())
			return e.cat, nil
		}
	}
	p, etag, err := catalog.Current(ctx, c.store, name)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			if e != nil {
				c.remove(name, e.cat)
			}
			if c.missing != nil {
				c.missing.Add(name, struct{}{})
			}
		}
		return nil, err
	}
	var cat *catalog.Catalog
	if e != nil && e.cat.Meta.Digest == p.Digest {
		// The same content published again (another ref, or back to it):
		// only the pointer, hence Last-Modified, changed.
		cp := *e.cat
		cp.Pointer = p
		cat = &cp
	} else {
		if cat, err = catalog.OpenDigest(ctx, c.store, name, p.Digest); err != nil {
			return nil, err
		}
		cat.Pointer = p
		cat.ReadGap = c.readGap
	}
	ne := &entry{name: name, cat: cat, etag: etag, size: footprint(cat)}
	ne.checked.Store(start.UnixNano())
	c.insert(ne)
	return cat, nil
}

// insert replaces name's entry and evicts the least recently used entries
// beyond the budget. An entry larger than the whole budget is not kept.
func (c *cache) insert(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.add(e.name, e)
}

// remove drops name's entry; with cat non-nil, only if it still holds cat
// (a newer entry may have replaced it meanwhile). Without cat, it also
// forgets that name was missing: a publish in this process is seen at once.
func (c *cache) remove(name string, cat *catalog.Catalog) {
	if cat == nil && c.missing != nil {
		c.missing.Remove(name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries.peek(name); ok && (cat == nil || e.cat == cat) {
		c.entries.remove(name)
	}
}
