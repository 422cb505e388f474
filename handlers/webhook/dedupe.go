package webhook

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Dedupe remembers delivery ids for a while, so a redelivered notification
// does not trigger again. It is bounded in bytes, whatever the senders
// send: ids are kept as their SHA-256 (32 bytes each, however long the id),
// past max ids the least recently seen are forgotten, and ids expire after
// ttl. Safe for concurrent use.
//
// The LRU is golang-lru's; expiry is ours rather than its expirable
// variant's, because that one reads the wall clock, and the windows here
// are tested with a fake one.
type Dedupe struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	lru *simplelru.LRU[[sha256.Size]byte, time.Time]
}

// DedupeEntryBytes bounds the memory one remembered id takes (key, time
// and the LRU's list and map overhead), so a window of max ids takes at
// most max*DedupeEntryBytes.
const DedupeEntryBytes = 160

// NewDedupe returns a Dedupe holding at most max ids for ttl each.
func NewDedupe(max int, ttl time.Duration) *Dedupe {
	if max <= 0 {
		max = 1
	}
	l, _ := simplelru.NewLRU[[sha256.Size]byte, time.Time](max, nil) // err only for max <= 0
	return &Dedupe{ttl: ttl, now: time.Now, lru: l}
}

// SetClock replaces time.Now (tests).
func (d *Dedupe) SetClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.now = now
}

// Seen reports whether every id was already recorded within the ttl, and
// records them all. An empty list is never seen: requests without ids are
// never dropped. A batch with one new id is processed whole; the engine
// coalesces the repeated triggers.
func (d *Dedupe) Seen(ids ...string) bool {
	if len(ids) == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	all := true
	for _, id := range ids {
		if id == "" {
			all = false
			continue
		}
		k := sha256.Sum256([]byte(id))
		// The window runs from the first delivery: a sender that keeps
		// redelivering is heard again once it has passed. Get keeps the id
		// recent without moving its window.
		if at, ok := d.lru.Get(k); ok && now.Sub(at) < d.ttl {
			continue
		}
		d.lru.Add(k, now)
		all = false
	}
	// Drop expired entries from the old end so memory follows the traffic.
	for {
		_, at, ok := d.lru.GetOldest()
		if !ok || now.Sub(at) < d.ttl {
			break
		}
		d.lru.RemoveOldest()
	}
	return all
}

// Len returns how many ids are remembered.
func (d *Dedupe) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Len()
}
