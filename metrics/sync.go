package metrics

import (
	"sync"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// ResultFailed is the result label of failed syncs; successful ones carry
// their action (UpToDate, Reused, Published).
const ResultFailed = "Failed"

// SyncObserver returns a [pipeline.Observer] feeding the sync metrics
// from progress events; pass it to engine.WithObservers. Published events
// carry the result (action, phase durations, bytes pulled); Failed events
// the error's reason. A failed sync's phases are not recorded: only its total
// duration, measured from its Resolving event.
func (m *Metrics) SyncObserver() pipeline.Observer {
	return &syncObserver{m: m, starts: map[string][]time.Time{}}
}

type syncObserver struct {
	m  *Metrics
	mu sync.Mutex
	// starts are the Resolving times of syncs not finished yet, oldest
	// first, per catalog. Each sync's events come from a goroutine of its
	// own, so the next sync's Resolving may arrive before the last one's
	// end: a queue keeps each end paired with its own start.
	starts map[string][]time.Time
}

func (o *syncObserver) Observe(e pipeline.Event) {
	switch e.Phase {
	case pipeline.PhaseResolving:
		o.mu.Lock()
		o.starts[e.Catalog] = append(o.starts[e.Catalog], e.Time)
		o.mu.Unlock()
		o.m.syncsRunning.add(1)
	case pipeline.PhasePublished:
		o.finished(e.Catalog)
		if r := e.Result; r != nil {
			o.m.syncs.with(e.Catalog, string(r.Action), "").inc(1)
			o.m.syncDuration.with(string(r.Action)).observe(r.Duration.Seconds())
			for ph, d := range r.Phases {
				o.m.phaseDuration.with(string(ph)).observe(d.Seconds())
			}
			o.m.bytesPulled.inc(float64(r.BytesPulled))
			o.m.files.with("parsed").inc(float64(r.Files - r.FilesReused))
			o.m.files.with("reused").inc(float64(r.FilesReused))
		}
	case pipeline.PhaseFailed:
		start, ok := o.finished(e.Catalog)
		reason := pipeline.ReasonInternal
		if e.Err != nil {
			reason = e.Err.Reason
		}
		o.m.syncs.with(e.Catalog, ResultFailed, string(reason)).inc(1)
		if ok {
			o.m.syncDuration.with(ResultFailed).observe(e.Time.Sub(start).Seconds())
		}
	}
}

// finished pops the catalog's oldest start, if any: a sync failing before
// it resolved anything (an invalid name) never started.
func (o *syncObserver) finished(catalog string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.starts[catalog]
	if len(q) == 0 {
		return time.Time{}, false
	}
	start := q[0]
	if len(q) == 1 {
		delete(o.starts, catalog)
	} else {
		o.starts[catalog] = q[1:]
	}
	o.m.syncsRunning.add(-1)
	return start, true
}
