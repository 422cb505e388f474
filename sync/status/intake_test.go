package status

import (
	"context"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Flush returns once the end of the sync is on the status: at once for a
// catalog it does not know, not for a sync that ended before since; an
// end it could not wait for is marked late.
func TestFlush(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Minute)
	}
	ctx, cancel := bounded()
	defer cancel()
	if r.w.Flush(ctx, "unknown", r.clock()); ctx.Err() != nil {
		t.Fatal("Flush waited for a catalog it does not know")
	}
	start := r.clock()
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	over, stop := context.WithCancel(context.Background())
	stop()
	r.w.Flush(over, "cat", start)
	r.w.mu.Lock()
	late := r.w.entries["cat"].late
	r.w.mu.Unlock()
	if !late {
		t.Error("an end Flush could not wait for is not marked late")
	}
	r.mustWrite()
	ctx, cancel = bounded()
	defer cancel()
	if r.w.Flush(ctx, "cat", start); ctx.Err() != nil {
		t.Fatal("Flush did not see the written end of the sync")
	}
	// While a sync runs, an end not waited for is not late: the sync
	// itself will write its end.
	r.advance(time.Second)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.w.Flush(over, "cat", r.clock())
	r.w.mu.Lock()
	late = r.w.entries["cat"].late
	r.w.mu.Unlock()
	if late {
		t.Error("Flush marked a running sync's end late")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r.w.Flush(ctx, "cat", start.Add(time.Second)); ctx.Err() == nil {
		t.Fatal("Flush returned for the end of an older sync")
	}
}
