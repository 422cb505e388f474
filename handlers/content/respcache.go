package content

import (
	"bytes"
	"context"
	"sync"

	"golang.org/x/sync/singleflight"
)

// DefaultResponseCacheSize bounds the bytes of metas answers kept in
// memory. Content under a digest never changes, so an answer keyed by the
// digest, the query and the encoding stays right for as long as it is
// kept: hot queries skip the store and, for gzip, the compression.
const DefaultResponseCacheSize = 64 << 20

// respCache is an LRU of response bodies bounded by bytes. Concurrent
// misses of one key are answered by a single fill.
type respCache struct {
	max, maxEntry int64

	mu     sync.Mutex
	bodies *weighted[string, []byte] // weighed by capacity: the memory held
	fills  singleflight.Group
}

func newRespCache(max int64) *respCache {
	return &respCache{max: max, maxEntry: max / 4,
		bodies: newWeighted[string](max, func(b []byte) int64 { return int64(cap(b)) })}
}

// fits reports whether a body of n bytes may be kept.
func (c *respCache) fits(n int64) bool { return c != nil && c.max > 0 && n <= c.maxEntry }

func (c *respCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies.get(key)
}

// load returns the cached body of key, or fills it with fill once however
// many callers miss at the same time. fill runs on ctx, which should not
// be tied to one client's request.
func (c *respCache) load(ctx context.Context, key string, fill func(context.Context) ([]byte, error)) ([]byte, error) {
	if b, ok := c.get(key); ok {
		return b, nil
	}
	v, err, _ := c.fills.Do(key, func() (any, error) {
		if b, ok := c.get(key); ok {
			return b, nil
		}
		b, err := fill(ctx)
		if err != nil {
			return nil, err
		}
		return c.add(key, b), nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// add keeps body under key. What counts against the budget is the memory
// held, the buffer's capacity: a bytes.Buffer's slice may be twice its
// length, so a body with much spare room is copied to a tight one first.
func (c *respCache) add(key string, body []byte) []byte {
	if int64(len(body)) > c.maxEntry {
		return body
	}
	if cap(body)-len(body) > len(body)/16 {
		body = bytes.Clone(body)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.bodies.peek(key); ok {
		return b
	}
	c.bodies.add(key, body)
	return body
}
