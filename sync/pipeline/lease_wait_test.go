package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
)

// firstLeaseWait holds catalog "c" as another replica, then lets a
// pipeline (lease TTL ttl, clock at the holder's last renewal plus since)
// try to take it and returns the first wait it reports, with the record
// of the holder's lease.
func firstLeaseWait(t *testing.T, ttl, since time.Duration) (pipeline.Wait, catalog.LeaseRecord) {
	t.Helper()
	st := newStore(t)
	held, rec, err := catalog.AcquireLease(context.Background(), st, "c", "", catalog.LeaseHolder{Replica: "other", Instance: "other-1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	effective := ttl
	if effective <= 0 {
		effective = catalog.DefaultLeaseTTL
	}
	renewed := rec.Expires.Add(-effective)
	pl := pipeline.New(newFakeSource(), st, pipeline.WithTempDir(t.TempDir()), pipeline.WithLeaseTTL(ttl),
		pipeline.WithClock(func() time.Time { return renewed.Add(since) }))
	log := newPhaseLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := pl.HoldLease(ctx, "c", []pipeline.Observer{log})
		done <- err
	}()
	waitUntil(t, "a lease wait", func() bool { return log.waitedOn("other") })
	cancel()
	if err := <-done; err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldLease after cancel: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	return log.waits[0], rec
}

// TestUnitLeaseWaitRenewedAndStalled: a waiter reports when the holder
// last renewed (its expiry less the TTL, the configured one or else the
// default) and calls it stalled only once it missed a renewal (TTL/3) by
// more than a second.
func TestUnitLeaseWaitRenewedAndStalled(t *testing.T) {
	const ttl = 30 * time.Second
	for _, c := range []struct {
		ttl, since time.Duration
		stalled    bool
	}{
		{ttl, 0, false},
		{ttl, ttl/3 - time.Second + time.Millisecond, false},
		{ttl, ttl/3 + time.Second, false},
		{ttl, ttl/3 + time.Second + time.Millisecond, true},
		{0, catalog.DefaultLeaseTTL/3 + time.Second + time.Millisecond, true},
		{0, catalog.DefaultLeaseTTL / 3, false},
	} {
		w, rec := firstLeaseWait(t, c.ttl, c.since)
		effective := c.ttl
		if effective == 0 {
			effective = catalog.DefaultLeaseTTL
		}
		if !w.Renewed.Equal(rec.Expires.Add(-effective)) || !w.Until.Equal(rec.Expires) {
			t.Errorf("ttl %v: renewed %v until %v; want %v and %v", c.ttl, w.Renewed, w.Until, rec.Expires.Add(-effective), rec.Expires)
		}
		if w.Stalled != c.stalled {
			t.Errorf("ttl %v, %v after the renewal: stalled %v, want %v", c.ttl, c.since, w.Stalled, c.stalled)
		}
	}
}

// A sync whose context ends mid-pull fails as Canceled (retryable),
// whatever error the interrupted step returned, so a shutdown is never
// reported as a registry failure.
func TestUnitCanceledMidPull(t *testing.T) {
	t.Parallel()
	src, _, pl := newUnit(t)
	src.tag("reg/c:v1", newImage(t, catalogLayer(t)))
	pulling := make(chan struct{})
	src.layer = func(ctx context.Context, _ []byte) (*source.LayerReader, error) {
		close(pulling)
		<-ctx.Done()
		return nil, &source.RegistryError{Op: "get layer", Ref: "reg/c", Err: errors.New("connection reset")}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage("reg/c:v1")})
		done <- err
	}()
	<-pulling
	cancel()
	err := <-done
	if se, ok := pipeline.AsError(err); !ok || se.Reason != pipeline.ReasonCanceled || !se.Retryable {
		t.Fatalf("err = %v, want a retryable Canceled", err)
	}
}
