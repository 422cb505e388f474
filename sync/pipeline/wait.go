package pipeline

import (
	"context"
	"time"
)

// WaitReason says what a sync that has not started yet is waiting for.
type WaitReason string

const (
	// WaitLease means another replica holds the catalog's sync lease.
	WaitLease WaitReason = "Lease"
	// WaitSlot means the engine's cap on concurrent syncs is reached.
	WaitSlot WaitReason = "SyncSlot"
	// WaitRate means the registry's start-rate limit is reached.
	WaitRate WaitReason = "RegistryRate"
)

// Wait reports that a sync of Catalog is waiting, or (Over) no longer.
type Wait struct {
	Catalog string
	Reason  WaitReason
	// Holder is the replica holding the lease (WaitLease); Renewed is when
	// it last renewed it and Until when it lapses unrenewed.
	Holder         string
	Renewed, Until time.Time
	// Detail is a short explanation (the registry host, the slot count).
	Detail string
	// Stalled is set for WaitLease when the holder has missed its
	// renewals: it has probably died, and nobody else reports the catalog.
	Stalled bool
	Over    bool
	Time    time.Time
}

// WaitObserver is an Observer that also hears of waits. ObserveWait is
// called on the waiting goroutine and must not block.
type WaitObserver interface {
	ObserveWait(Wait)
}

// Flusher is an Observer that can say when it has reported the end of a
// catalog's sync (e.g. written it to the status): the sync lease is held
// until then, briefly, so the next holder's reports come after it.
type Flusher interface {
	// Flush returns once the catalog's last sync that ended at or after
	// since has been reported, or ctx ends.
	Flush(ctx context.Context, catalog string, since time.Time)
}

// flushWait bounds how long a released lease waits for observers.
const flushWait = 2 * time.Second

// NotifyWait tells the observers that hear of waits (WaitObserver) of w.
func NotifyWait(obs []Observer, w Wait) {
	if w.Time.IsZero() {
		w.Time = time.Now()
	}
	for _, o := range obs {
		if wo, ok := o.(WaitObserver); ok {
			wo.ObserveWait(w)
		}
	}
}

func flushObservers(ctx context.Context, obs []Observer, name string, since time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWait)
	defer cancel()
	for _, o := range obs {
		if f, ok := o.(Flusher); ok {
			f.Flush(ctx, name, since)
		}
	}
}
