package content

import (
	"fmt"
	"testing"
)

// held sums the weights of what the cache holds, counted afresh rather
// than read from its running total.
func held(c *weighted[string, []byte]) int64 {
	var n int64
	for _, k := range c.lru.Keys() {
		v, _ := c.peek(k)
		n += c.weigh(v)
	}
	return n
}

// TestWeightedBound: whatever is added, the weights held stay within the
// budget and the running total matches them; the least recently used go
// first; an entry heavier than the budget is not kept.
func TestWeightedBound(t *testing.T) {
	c := newWeighted[string](100, func(b []byte) int64 { return int64(len(b)) })
	check := func(when string) {
		t.Helper()
		if h := held(c); h > 100 || h != c.weight() {
			t.Fatalf("%s: holding %d, total says %d, budget 100", when, h, c.weight())
		}
	}
	for i := range 50 {
		c.add(fmt.Sprint(i), make([]byte, 7+i%13))
		check(fmt.Sprint("add ", i))
	}
	// Replacing a key counts the new weight only.
	c.add("r", make([]byte, 40))
	c.add("r", make([]byte, 10))
	check("replace")
	if v, _ := c.peek("r"); len(v) != 10 {
		t.Fatalf("r holds %d bytes", len(v))
	}
	// LRU order: a read keeps "a" while later adds push others out.
	c.add("a", make([]byte, 30))
	c.add("b", make([]byte, 30))
	c.get("a")
	c.add("c", make([]byte, 30))
	c.add("d", make([]byte, 30))
	if _, ok := c.peek("a"); !ok {
		t.Fatal("the recently read entry was evicted")
	}
	if _, ok := c.peek("b"); ok {
		t.Fatal("the least recently used entry was kept")
	}
	check("lru")
	if c.add("huge", make([]byte, 101)) {
		t.Fatal("an entry over the whole budget was kept")
	}
	if _, ok := c.peek("a"); !ok {
		t.Fatal("an entry too large to keep evicted the others")
	}
	c.remove("a")
	check("remove")
	if c.len() != 2 || c.weight() != 60 {
		t.Fatalf("%d entries weighing %d, want c and d (60)", c.len(), c.weight())
	}
}
