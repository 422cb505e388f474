package storagetest

import (
	"context"
	"io"
	"maps"
	"sync"

	"github.com/catalogsync/catalogsync/storage"
)

// Counting wraps a Store and counts, per key, the Stats and Gets made and
// the bytes actually read: tests use it to prove a reader touches only
// what it must.
type Counting struct {
	storage.Store
	mu    sync.Mutex
	stats map[string]int
	gets  map[string]int
	bytes map[string]int64
}

// NewCounting wraps s.
func NewCounting(s storage.Store) *Counting {
	c := &Counting{Store: s}
	c.Reset()
	return c
}

// Reset zeroes the counters.
func (c *Counting) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats, c.gets, c.bytes = map[string]int{}, map[string]int{}, map[string]int64{}
}

// Snapshot returns copies of the counters: Stats and Gets per key (failed
// calls included), bytes read per key.
func (c *Counting) Snapshot() (stats, gets map[string]int, bytes map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.stats), maps.Clone(c.gets), maps.Clone(c.bytes)
}

// Stat counts the Stat and passes it on.
func (c *Counting) Stat(ctx context.Context, key string) (storage.Info, error) {
	c.mu.Lock()
	c.stats[key]++
	c.mu.Unlock()
	return c.Store.Stat(ctx, key)
}

// Get counts the Get and passes it on.
func (c *Counting) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	rc, err := c.Store.Get(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	return &countingReader{rc, c, key}, nil
}

type countingReader struct {
	io.ReadCloser
	c   *Counting
	key string
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.mu.Lock()
	r.c.bytes[r.key] += int64(n)
	r.c.mu.Unlock()
	return n, err
}
