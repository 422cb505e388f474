package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
)

// leaseKey carries a held sync lease in a context, so a Pipeline run by an
// engine that took the lease does not take it again.
type leaseKey struct{}

type heldLease struct {
	name  string
	lease *catalog.Lease
}

// leasePoll is how often a waiting replica looks at the lease again.
const leasePoll = 250 * time.Millisecond

// HoldLease takes the catalog's sync lease for a whole sync, waiting while
// another replica holds it (reported to obs as a Wait), and returns a
// context that carries it and ends (cause catalog.ErrLeaseLost) if it is
// lost. release waits briefly for obs that are Flushers to report the
// sync's end, then gives the lease up.
//
// Held from before the tag is resolved to after the outcome is reported,
// the lease makes its holder the one replica that reports the catalog's
// progress; the others wait, then find the work done.
func (p *Pipeline) HoldLease(ctx context.Context, name string, obs []Observer) (_ context.Context, release func(), err error) {
	if held, ok := ctx.Value(leaseKey{}).(heldLease); ok && held.name == name {
		return ctx, func() {}, nil
	}
	l, err := p.acquire(ctx, name, obs)
	if err != nil {
		return ctx, nil, err
	}
	start := time.Now()
	lctx, cancel := context.WithCancelCause(context.WithValue(ctx, leaseKey{}, heldLease{name, l}))
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	return lctx, func() {
		stop()
		flushObservers(ctx, obs, name, start)
		l.Release(ctx)
		cancel(nil)
	}, nil
}

func (p *Pipeline) acquire(ctx context.Context, name string, obs []Observer) (*catalog.Lease, error) {
	logged, waiting := false, false
	defer func() {
		if waiting {
			NotifyWait(obs, Wait{Catalog: name, Reason: WaitLease, Over: true})
		}
	}()
	for {
		l, holder, err := catalog.AcquireLease(ctx, p.store, name, "", p.holder, p.leaseTTL)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, catalog.ErrLeaseHeld) {
			return nil, storageError(PhaseResolving, err)
		}
		if !logged {
			p.log.Info("another replica is syncing this catalog; waiting for it", "catalog", name, "replica", holder.Replica)
			logged = true
		}
		ttl := p.leaseTTL
		if ttl <= 0 {
			ttl = catalog.DefaultLeaseTTL
		}
		// A live holder renews every ttl/3 and reports the catalog itself;
		// one that missed a renewal by a second has probably died, and
		// only then does a waiter say on whom it waits.
		renewed := holder.Expires.Add(-ttl)
		stalled := p.now().Sub(renewed) > ttl/3+time.Second
		NotifyWait(obs, Wait{Catalog: name, Reason: WaitLease, Holder: holder.Replica,
			Renewed: renewed, Until: holder.Expires, Stalled: stalled})
		waiting = true
		select {
		case <-ctx.Done():
			return nil, &Error{Phase: PhaseResolving, Reason: ReasonCanceled, Retryable: true, Err: ctx.Err()}
		case <-time.After(leasePoll):
		}
	}
}
