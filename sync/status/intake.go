package status

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Observe records a sync event; a worker applies it. It only takes a
// lock, so it never holds up the sync.
func (w *Writer) Observe(e pipeline.Event) {
	o, ok := w.view.get(e.Catalog)
	if !ok {
		return // not a ClusterCatalog (any more): nothing to report on
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entryLocked(e.Catalog)
	if e.Time.Before(en.attemptStart) {
		// The end of an earlier sync delivered after the next one began
		// (each sync has its own delivery goroutine): it is superseded.
		return
	}
	en.waiting = nil
	if en.live == nil && !e.Terminal() {
		w.startAttemptLocked(en, o, e.Time, now)
	}
	gen := o.cat.Generation
	if en.live != nil {
		gen = en.attemptGen
	}
	if e.Terminal() {
		en.outcome, en.live, en.endedAt, en.yielded = outcomeOf(e, gen), nil, e.Time, false
		en.ptrStale = true
	} else {
		// The outcome before this sync gives the reason: the vocabulary
		// has none for "running", and after a failure every sync is a
		// retry.
		_, failedBefore := w.settledLocked(en, o)
		en.live = liveProgress(o.cat.Image.String(), e, gen, failedBefore)
	}
	w.signal(en)
}

// startAttemptLocked notes a new sync. If the catalog has settled at this
// generation, its first moments stay unshown: most repeats end within
// them.
func (w *Writer) startAttemptLocked(en *entry, o object, start, now time.Time) {
	en.attemptGen, en.attemptStart = o.cat.Generation, start
	en.holdUntil, en.late = time.Time{}, false
	// After a wait was shown, the sync must show that it runs.
	if settled, _ := w.settledLocked(en, o); settled && !en.waitShown {
		en.holdUntil = now.Add(w.quiet)
	}
	en.waitShown = false
}

// outcomeOf is the Progressing condition a sync's end asks for: True/
// Succeeded, True/Retrying after a retryable failure, False/Blocked after
// a terminal one.
func outcomeOf(e pipeline.Event, gen int64) *progress {
	if e.Phase == pipeline.PhasePublished {
		p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen, key: "succeeded"}
		if e.Result != nil {
			p.digest = e.Result.Digest
			p.message = successMessage(e.Result)
			p.upToDate = e.Result.Action == pipeline.ActionUpToDate
		}
		return p
	}
	p := &progress{status: metav1.ConditionTrue, reason: ReasonRetrying, generation: gen, key: "failed", failed: true}
	if e.Err != nil {
		p.message = failureMessage(e.Err)
		if !e.Err.Retryable {
			p.status, p.reason = metav1.ConditionFalse, ReasonBlocked
		}
	}
	return p
}

// liveProgress is the Progressing condition of a running sync's phase.
func liveProgress(image string, e pipeline.Event, gen int64, failedBefore bool) *progress {
	p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen,
		key: string(e.Phase), message: progressMessage(image, e)}
	if failedBefore {
		p.reason = ReasonRetrying
	}
	if e.Phase == pipeline.PhasePulling {
		p.key = fmt.Sprintf("%s/%d", e.Phase, e.Layer)
	}
	return p
}

// ObserveWait records that a sync waits (for a slot, the registry's rate,
// or a lease whose holder stopped renewing it), so the status says so
// within a second. A wait on a live holder's lease is not shown: the
// holder reports the catalog.
func (w *Writer) ObserveWait(wt pipeline.Wait) {
	o, ok := w.view.get(wt.Catalog)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entryLocked(wt.Catalog)
	if wt.Over || (wt.Reason == pipeline.WaitLease && !wt.Stalled) {
		if en.waiting != nil && (wt.Over || en.waiting.key == "wait/"+string(wt.Reason)) {
			en.waiting = nil
			w.signal(en)
		}
		return
	}
	_, failedBefore := w.settledLocked(en, o)
	p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: o.cat.Generation,
		key: "wait/" + string(wt.Reason), message: waitMessage(wt)}
	if failedBefore {
		p.reason = ReasonRetrying
	}
	en.waiting = p
	w.signal(en)
}

// Flush waits until the end of the catalog's last sync that ended at or
// after since is on the status (or there is nothing to write, or it is
// held back for another replica's running sync), or ctx ends; then the
// sync's lease may go to the next holder. A sync whose end could not be
// written in time writes it later only if nobody else wrote the condition
// meanwhile.
func (w *Writer) Flush(ctx context.Context, name string, since time.Time) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		en := w.entries[name]
		done := en == nil || en.other != "" || (!en.endedAt.IsZero() && !en.endedAt.Before(since) &&
			(!en.flushed.Before(en.endedAt) || en.yielded))
		if !done && ctx.Err() != nil && en.live == nil {
			en.late = true
		}
		w.mu.Unlock()
		if done || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// settledLocked reports whether the catalog's last sync ended at its
// current generation (known from this process, or from the status a
// previous one wrote), and whether that sync failed.
func (w *Writer) settledLocked(en *entry, o object) (settled, failed bool) {
	if en.outcome != nil {
		return en.outcome.generation == o.cat.Generation, en.outcome.failed
	}
	if c := o.status.Condition(TypeProgressing); c != nil {
		return c.ObservedGeneration == o.cat.Generation, c.Reason == ReasonRetrying || c.Reason == ReasonBlocked
	}
	return false, false
}

// sourceEvent hears of every change of a ClusterCatalog (and resyncs).
func (w *Writer) sourceEvent(name string) {
	o, exists := w.view.get(name)
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entries[name]
	if en == nil {
		if !exists {
			w.queue.Add(name) // let a worker forget it
			return
		}
		en = w.entryLocked(name)
	}
	if exists && !slices.Contains(en.ours, o.rv) {
		// Someone else wrote the object (a spec edit, another replica),
		// or a resync: compare with what the server has now, and re-read
		// what is published (level-based).
		en.applied, en.appliedRV = nil, ""
		en.ptrStale = true
		if !o.labeled {
			en.labelDone = false
		}
	}
	w.signal(en)
}
