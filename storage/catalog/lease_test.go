package catalog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

func TestLease(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := LeaseHolder{Replica: "a", Instance: "1"}
	b := LeaseHolder{Replica: "b", Instance: "1"}
	const ttl = 300 * time.Millisecond

	la, _, err := AcquireLease(ctx, s, "x", "sha256:aa", a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	// Held and renewed: b is refused well past one TTL.
	time.Sleep(2 * ttl)
	if _, holder, err := AcquireLease(ctx, s, "x", "sha256:bb", b, ttl); !errors.Is(err, ErrLeaseHeld) || holder.Replica != "a" || holder.Digest != "sha256:aa" {
		t.Fatalf("b acquired a live lease: %v %+v", err, holder)
	}
	// Released: b gets it at once.
	la.Release(ctx)
	if la.Context().Err() == nil {
		t.Fatal("released lease's context not done")
	}
	lb, _, err := AcquireLease(ctx, s, "x", "sha256:bb", b, ttl)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// A new process of replica b (a restart) takes over b's lease at once;
	// the old holder learns it lost it.
	b2 := LeaseHolder{Replica: "b", Instance: "2"}
	lb2, _, err := AcquireLease(ctx, s, "x", "sha256:bb", b2, ttl)
	if err != nil {
		t.Fatalf("restarted replica: %v", err)
	}
	select {
	case <-lb.Context().Done():
		if !errors.Is(context.Cause(lb.Context()), ErrLeaseLost) {
			t.Fatalf("cause %v", context.Cause(lb.Context()))
		}
	case <-time.After(2 * ttl):
		t.Fatal("the replaced holder did not notice")
	}
	lb.Release(ctx) // must not undo b2's lease
	if rec, err := ReadLease(ctx, s, "x"); err != nil || rec.Instance != "2" || !rec.Expires.After(time.Now()) {
		t.Fatalf("lease after the stale release: %+v %v", rec, err)
	}
	// A holder that died (no renewals) is taken over after its TTL.
	lb2.cancel(nil)
	<-lb2.done
	if _, _, err := AcquireLease(ctx, s, "x", "sha256:cc", a, ttl); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("taken over before the TTL: %v", err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	la2, _, err := AcquireLease(ctx, s, "x", "sha256:cc", a, ttl)
	if err != nil {
		t.Fatalf("expired lease: %v", err)
	}
	la2.Release(ctx)
	// Garbage is replaced.
	if _, err := s.PutIf(ctx, "catalogs/x/syncing", []byte("{not json"), mustETag(t, s, "catalogs/x/syncing")); err != nil {
		t.Fatal(err)
	}
	if l, _, err := AcquireLease(ctx, s, "x", "sha256:dd", b, ttl); err != nil {
		t.Fatalf("over a corrupt lease: %v", err)
	} else {
		l.Release(ctx)
	}
}

func mustETag(t *testing.T, s storage.Store, key string) string {
	t.Helper()
	in, err := s.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return in.ETag
}
