package metrics

import "time"

// The sync metrics are recorded by the sync's own observer
// (pipeline.MetricsObserver), which knows its events; this package knows
// only what to count, so a binary that serves without syncing links no
// sync code for its metrics.

// SyncStarted counts one more sync running.
func (m *Metrics) SyncStarted() { m.syncsRunning.add(1) }

// SyncEnded counts one fewer sync running.
func (m *Metrics) SyncEnded() { m.syncsRunning.add(-1) }

// SyncFinished counts a finished sync of catalog by result (its action,
// or Failed with a reason) and, when timed, observes its duration.
func (m *Metrics) SyncFinished(catalog, result, reason string, d time.Duration, timed bool) {
	m.syncs.with(catalog, result, reason).inc(1)
	if timed {
		m.syncDuration.with(result).observe(d.Seconds())
	}
}

// SyncPhase observes the time a successful sync spent in a phase.
func (m *Metrics) SyncPhase(phase string, d time.Duration) {
	m.phaseDuration.with(phase).observe(d.Seconds())
}

// SyncPulled counts compressed layer bytes a successful sync pulled.
func (m *Metrics) SyncPulled(bytes int64) { m.bytesPulled.inc(float64(bytes)) }

// SyncFiles counts the FBC files a successful sync published: parsed, or
// reused from the content published before.
func (m *Metrics) SyncFiles(parsed, reused int) {
	m.files.with("parsed").inc(float64(parsed))
	m.files.with("reused").inc(float64(reused))
}
