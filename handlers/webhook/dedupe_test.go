package webhook

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestDedupe(t *testing.T) {
	d := NewDedupe(3, time.Hour)
	if d.Seen() || d.Seen("") || d.Seen("") {
		t.Fatal("requests without ids are never duplicates")
	}
	if d.Seen("a") || !d.Seen("a") {
		t.Fatal("a: first new, then seen")
	}
	// A batch is a duplicate only when every id was seen.
	if d.Seen("a", "b") || !d.Seen("a", "b") || !d.Seen("b") {
		t.Fatal("batch")
	}
	// Bounded: the least recently used id goes first.
	d.Seen("c")
	d.Seen("a") // a is now the most recent
	d.Seen("d") // evicts b
	if d.Len() != 3 {
		t.Fatalf("len %d", d.Len())
	}
	if d.Seen("b") {
		t.Fatal("b should have been evicted")
	}
}

// The window runs from the first delivery: a sender redelivering without
// pause is heard again once it has passed, not shut out for good. Judged
// on state with a short window (no fake clock: expiry is the library's,
// on the wall clock), not on how long it took.
func TestDedupeWindowFromFirstDelivery(t *testing.T) {
	d := NewDedupe(16, 200*time.Millisecond)
	if d.Seen("b") {
		t.Fatal("b is new")
	}
	eventually(t, "a redelivered id to be heard again", func() bool { return !d.Seen("b") })
	// Expired entries are swept, so memory follows the traffic.
	eventually(t, "expired ids to be dropped", func() bool { return d.Len() == 0 })
}

func TestDedupeBoundUnderLoad(t *testing.T) {
	d := NewDedupe(100, time.Hour)
	for i := range 10_000 {
		d.Seen(fmt.Sprint(i))
	}
	if d.Len() != 100 {
		t.Fatalf("len %d", d.Len())
	}
	if !d.Seen("9999") || d.Seen("0") {
		t.Fatal("kept the wrong ids")
	}
}

// TestDedupeBoundedInBytes: a window full of 256 KiB ids holds their
// hashes, not the ids: 600 of them (150 MiB of ids) leave well under a
// MiB behind.
func TestDedupeBoundedInBytes(t *testing.T) {
	d := NewDedupe(4096, time.Hour)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 600 {
		id := strings.Repeat("x", 256<<10) + fmt.Sprint(i)
		if d.Seen(id) {
			t.Fatalf("id %d seen before", i)
		}
	}
	grown := int64(heap()) - int64(before)
	if d.Len() != 600 || grown > 600*DedupeEntryBytes*4 {
		t.Fatalf("%d ids, heap grew %d bytes", d.Len(), grown)
	}
	if !d.Seen(strings.Repeat("x", 256<<10) + "7") {
		t.Fatal("a remembered long id is seen")
	}
}

// An empty id in a batch does not stop the ids after it being recorded.
func TestDedupeEmptyIDFirst(t *testing.T) {
	d := NewDedupe(16, time.Hour)
	d.Seen("", "x")
	if !d.Seen("x") {
		t.Fatal("x, after an empty id in its batch, was not recorded")
	}
}
