package content

import (
	"context"
	"fmt"
	"testing"
)

// TestRespCacheCountsCapacity fills the cache with bodies whose buffers are
// far larger than their contents, as a bytes.Buffer leaves them: the memory
// kept (capacity) must stay within the budget, not just the lengths.
func TestRespCacheCountsCapacity(t *testing.T) {
	const budget = 64 << 10
	c := newRespCache(budget)
	for i := range 64 {
		key := fmt.Sprint(i)
		_, err := c.load(context.Background(), key, func(context.Context) ([]byte, error) {
			b := make([]byte, 1<<10, 8<<10) // 1 KiB of content in an 8 KiB buffer
			return b, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var held int64
	c.mu.Lock()
	for _, k := range c.bodies.lru.Keys() {
		b, _ := c.bodies.peek(k)
		held += int64(cap(b))
	}
	c.mu.Unlock()
	if held > budget {
		t.Fatalf("cached bodies hold %d bytes of buffers, over the %d byte budget", held, budget)
	}
	if held == 0 {
		t.Fatal("nothing cached")
	}
}
