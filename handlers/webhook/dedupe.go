package webhook

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Dedupe remembers delivery ids for a while, so a redelivered notification
// does not trigger again. It is bounded in bytes, whatever the senders
// send: ids are kept as their SHA-256 (32 bytes each, however long the id),
// past a set number of ids the least recently seen are forgotten, and ids expire ttl
// after their first delivery. Safe for concurrent use.
//
// Expiry is golang-lru's expirable LRU, on the wall clock. Its sweeper
// goroutine lives as long as the process (the library has no Close), so a
// Dedupe is made once per receiver, not per request.
type Dedupe struct {
	// mu makes a batch's check-and-record one step: two concurrent
	// deliveries of one id must not both pass.
	mu  sync.Mutex
	lru *expirable.LRU[[sha256.Size]byte, struct{}]
}

// DedupeEntryBytes bounds the memory one remembered id takes (key, expiry
// and the LRU's list, map and expiry-bucket overhead), so a window of n ids
// takes at most n*DedupeEntryBytes.
const DedupeEntryBytes = 320

// NewDedupe returns a Dedupe holding at most entries ids for ttl each.
func NewDedupe(entries int, ttl time.Duration) *Dedupe {
	// Size 0 would mean unbounded to the library.
	entries = max(entries, 1)
	return &Dedupe{lru: expirable.NewLRU[[sha256.Size]byte, struct{}](entries, nil, ttl)}
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
	all := true
	for _, id := range ids {
		if id == "" {
			all = false
			continue
		}
		k := sha256.Sum256([]byte(id))
		// The window runs from the first delivery: a sender that keeps
		// redelivering is heard again once it has passed. Get keeps the id
		// recent without moving its expiry; Add (re)starts the window.
		if _, ok := d.lru.Get(k); ok {
			continue
		}
		d.lru.Add(k, struct{}{})
		all = false
	}
	return all
}

// Len returns how many ids are remembered, expired ones not yet swept
// included.
func (d *Dedupe) Len() int { return d.lru.Len() }
