package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// waitShown is how long a sync waits for a slot or the registry's rate
// before the wait is reported: most waits are shorter, and reporting them
// would only churn the status.
const waitShown = 250 * time.Millisecond

// waitSlot takes one of the engine's sync slots, reporting the wait to
// the observers if it lasts.
func (e *Engine) waitSlot(ctx context.Context, c catalogspec.Catalog) error {
	select {
	case e.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(waitShown):
	}
	pipeline.NotifyWait(e.observers, pipeline.Wait{Catalog: c.Name, Reason: pipeline.WaitSlot, Detail: fmt.Sprintf("%d syncs running", cap(e.slots))})
	defer pipeline.NotifyWait(e.observers, pipeline.Wait{Catalog: c.Name, Reason: pipeline.WaitSlot, Over: true})
	select {
	case e.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitRate waits for the registry's start rate, reporting the wait to the
// observers if it lasts.
func (e *Engine) waitRate(ctx context.Context, c catalogspec.Catalog) error {
	l := e.limiter(c.Image)
	r := l.Reserve()
	if !r.OK() {
		return fmt.Errorf("registry rate limit: burst 0")
	}
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	if d >= waitShown {
		pipeline.NotifyWait(e.observers, pipeline.Wait{Catalog: c.Name, Reason: pipeline.WaitRate, Detail: rateHost(c.Image), Until: time.Now().Add(d)})
		defer pipeline.NotifyWait(e.observers, pipeline.Wait{Catalog: c.Name, Reason: pipeline.WaitRate, Over: true})
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// rateHost is the registry whose start rate a sync of image waits for;
// OCI layouts share one limiter.
func rateHost(image catalogspec.Image) string {
	if h := image.Registry(); h != "" {
		return h
	}
	return "local"
}
