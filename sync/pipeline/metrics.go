package pipeline

import (
	"sync"
	"time"
)

// SyncRecorder is what MetricsObserver records into (package metrics'
// Metrics is one).
type SyncRecorder interface {
	SyncStarted()
	SyncEnded()
	SyncFinished(catalog, result, reason string, d time.Duration, timed bool)
	SyncPhase(phase string, d time.Duration)
	SyncPulled(bytes int64)
	SyncFiles(parsed, reused int)
}

// resultFailed is the result recorded for failed syncs; successful ones
// are recorded by their action.
const resultFailed = "Failed"

// MetricsObserver returns an Observer feeding r from progress events;
// pass it to engine.WithObservers. Published events carry the result
// (action, phase durations, bytes pulled); Failed events the error's
// reason. A failed sync's phases are not recorded: only its total
// duration, measured from its Resolving event.
func MetricsObserver(r SyncRecorder) Observer {
	return &metricsObserver{r: r, starts: map[string][]time.Time{}}
}

type metricsObserver struct {
	r  SyncRecorder
	mu sync.Mutex
	// starts are the Resolving times of syncs not finished yet, oldest
	// first, per catalog. Each sync's events come from a goroutine of its
	// own, so the next sync's Resolving may arrive before the last one's
	// end: a queue keeps each end paired with its own start.
	starts map[string][]time.Time
}

func (o *metricsObserver) Observe(e Event) {
	switch e.Phase {
	case PhaseResolving:
		o.mu.Lock()
		o.starts[e.Catalog] = append(o.starts[e.Catalog], e.Time)
		o.mu.Unlock()
		o.r.SyncStarted()
	case PhasePublished:
		o.finished(e.Catalog)
		if r := e.Result; r != nil {
			o.r.SyncFinished(e.Catalog, string(r.Action), "", r.Duration, true)
			for ph, d := range r.Phases {
				o.r.SyncPhase(string(ph), d)
			}
			o.r.SyncPulled(r.BytesPulled)
			o.r.SyncFiles(r.Files-r.FilesReused, r.FilesReused)
		}
	case PhaseFailed:
		start, ok := o.finished(e.Catalog)
		reason := ReasonInternal
		if e.Err != nil {
			reason = e.Err.Reason
		}
		o.r.SyncFinished(e.Catalog, resultFailed, string(reason), e.Time.Sub(start), ok)
	}
}

// finished pops the catalog's oldest start, if any: a sync failing before
// it resolved anything (an invalid name) never started.
func (o *metricsObserver) finished(catalog string) (time.Time, bool) {
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
	o.r.SyncEnded()
	return start, true
}
