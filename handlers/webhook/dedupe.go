package webhook

import (
	"container/list"
	stdsync "sync"
	"time"
)

// Dedupe remembers delivery ids for a while, so a redelivered notification
// does not trigger again. It is bounded: past max ids the oldest are
// forgotten, and ids expire after ttl. Safe for concurrent use.
type Dedupe struct {
	mu  stdsync.Mutex
	max int
	ttl time.Duration
	now func() time.Time
	ll  *list.List // front: most recently recorded
	m   map[string]*list.Element
}

type dedupeEntry struct {
	id string
	at time.Time
}

// NewDedupe returns a Dedupe holding at most max ids for ttl each.
func NewDedupe(max int, ttl time.Duration) *Dedupe {
	if max <= 0 {
		max = 1
	}
	return &Dedupe{max: max, ttl: ttl, now: time.Now, ll: list.New(), m: map[string]*list.Element{}}
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
		if e, ok := d.m[id]; ok {
			ent := e.Value.(*dedupeEntry)
			if now.Sub(ent.at) < d.ttl {
				// The window runs from the first delivery: a sender that
				// keeps redelivering is heard again once it has passed.
				d.ll.MoveToFront(e)
				continue
			}
			ent.at = now
			d.ll.MoveToFront(e)
			all = false
			continue
		}
		d.m[id] = d.ll.PushFront(&dedupeEntry{id: id, at: now})
		all = false
	}
	for d.ll.Len() > d.max {
		d.remove(d.ll.Back())
	}
	// Drop expired entries from the old end so memory follows the traffic.
	for e := d.ll.Back(); e != nil && now.Sub(e.Value.(*dedupeEntry).at) >= d.ttl; e = d.ll.Back() {
		d.remove(e)
	}
	return all
}

func (d *Dedupe) remove(e *list.Element) {
	delete(d.m, e.Value.(*dedupeEntry).id)
	d.ll.Remove(e)
}

// Len returns how many ids are remembered.
func (d *Dedupe) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ll.Len()
}
