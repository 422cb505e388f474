package content

import (
	"math"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// weighted is an LRU bounded by the total weight of its values (bytes
// held) rather than their number: golang-lru's simplelru, unbounded in
// entries, trimmed from the old end past max. An entry heavier than the
// whole budget is not kept. Not safe for concurrent use: callers lock.
type weighted[K comparable, V any] struct {
	max, used int64
	weigh     func(V) int64
	lru       *simplelru.LRU[K, V]
}

func newWeighted[K comparable, V any](max int64, weigh func(V) int64) *weighted[K, V] {
	c := &weighted[K, V]{max: max, weigh: weigh}
	// Every removal, eviction included, goes through the callback, so
	// used always matches what is held.
	c.lru, _ = simplelru.NewLRU[K, V](math.MaxInt, func(_ K, v V) { c.used -= c.weigh(v) }) // err only for size <= 0
	return c
}

// get returns k's value and makes it the most recently used.
func (c *weighted[K, V]) get(k K) (V, bool) { return c.lru.Get(k) }

// peek returns k's value without touching its recency.
func (c *weighted[K, V]) peek(k K) (V, bool) { return c.lru.Peek(k) }

// add keeps v under k, replacing what k held, and evicts the least
// recently used values beyond the budget. It reports whether v was kept.
func (c *weighted[K, V]) add(k K, v V) bool {
	c.lru.Remove(k)
	w := c.weigh(v)
	if w > c.max {
		return false
	}
	c.lru.Add(k, v)
	c.used += w
	for c.used > c.max {
		c.lru.RemoveOldest()
	}
	return true
}

func (c *weighted[K, V]) remove(k K) { c.lru.Remove(k) }

// weight is the total weight held.
func (c *weighted[K, V]) weight() int64 { return c.used }

func (c *weighted[K, V]) len() int { return c.lru.Len() }
