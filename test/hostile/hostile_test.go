package hostile

import (
	"testing"
	"time"
)

// TestHostileInput runs every hostile input against one registry and one
// `catalogsync serve` process that has a good catalog published: hostile
// images pushed to the catalog's tag (each sync started by the registry's
// own notification), then hostile webhook, CloudEvents and API requests.
// After each: a clear error (or the documented acceptance), the process
// alive and never restarted, nothing written outside the store, and the
// good catalog served byte for byte.
func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry and catalogsync serve")
	}
	start := time.Now()
	e := setup(t)
	t.Logf("setup: registry and serve up, good catalog %s published (%d bytes served) in %v",
		e.goodDigest, len(e.goodAll), time.Since(start).Round(time.Millisecond))

	// First, while the heap holds only the good catalog: the flood's
	// growth is measured against it, not against what the image cases'
	// bombs left for the garbage collector.
	t.Run("events-flood-of-long-ids", func(t *testing.T) { floodEvents(t, e) })

	t.Run("image", func(t *testing.T) {
		for _, c := range imageCases() {
			t.Run(c.name, func(t *testing.T) { runImage(t, e, c) })
		}
	})

	t.Run("trigger", func(t *testing.T) {
		syncs := e.syncs(t)
		for _, r := range hostileRequests(e) {
			t.Run(r.name, func(t *testing.T) { runRequest(t, e, r) })
		}
		// Past the engine's settle time: still no sync.
		time.Sleep(time.Second)
		if got := e.syncs(t); got != syncs {
			t.Errorf("hostile requests ran %v syncs", got-syncs)
		}

		t.Run("webhook-replayed-delivery-id", func(t *testing.T) {
			runReplay(t, e, "webhook-replayed-delivery-id", request{path: "/hooks/registry",
				body:    e.distributionEnvelope("hostile-replay-1"),
				headers: map[string]string{"Authorization": registrySecret, "Content-Type": distType}},
				[]string{`source="distribution"`, `outcome="duplicate"`})
		})
		t.Run("webhook-body-trickled", func(t *testing.T) { trickle(t, e) })
		t.Run("events-replayed-id", func(t *testing.T) {
			runReplay(t, e, "events-replayed-id", request{path: "/events",
				body:    e.zotEvent("hostile-replay-2"),
				headers: map[string]string{"Authorization": "Bearer " + eventsToken, "Content-Type": "application/cloudevents+json"}},
				nil)
		})
	})

	// Whatever ran above: one process, never restarted, nothing outside
	// the store, and the good catalog served as at the start.
	e.alive(t)
	e.contained(t)
	e.previous(t)
	t.Logf("total %v; highest serve peak RSS during an image sync: %s", time.Since(start).Round(time.Millisecond), mib(e.worstPeak))
}
