package catalog

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

func TestLease(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := LeaseHolder{Replica: "a", Instance: "a1"}
	b := LeaseHolder{Replica: "b", Instance: "b1"}
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
	// Another process with the same replica name (two on one host, both
	// named after it) does not take over a live holder's lease...
	b2 := LeaseHolder{Replica: "b", Instance: "b2"}
	if _, _, err := AcquireLease(ctx, s, "x", "sha256:bb", b2, ttl); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("same replica name, live holder: %v", err)
	}
	lb.Release(ctx)
	// ...but one on the same host takes over the lease of a holder whose
	// process is gone at once, and the old holder learns it lost it.
	dead := exitedPID(t)
	lb, _, err = AcquireLease(ctx, s, "x", "sha256:bb", LeaseHolder{Replica: "b", Instance: "b1", Host: "h", PID: dead}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	b2.Host, b2.PID = "h", os.Getpid()
	lb2, _, err := AcquireLease(ctx, s, "x", "sha256:bb", b2, ttl)
	if err != nil {
		t.Fatalf("holder with an exited PID: %v", err)
	}
	select {
	case <-lb.Context().Done():
		if !errors.Is(context.Cause(lb.Context()), ErrLeaseLost) {
			t.Fatalf("cause %v", context.Cause(lb.Context()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced holder did not notice")
	}
	lb.Release(ctx) // must not undo b2's lease
	if rec, err := ReadLease(ctx, s, "x"); err != nil || rec.Instance != "b2" || !rec.Expires.After(time.Now()) {
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

// exitedPID returns the PID of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestLeaseHolderOutlived: only a holder on the same host and PID
// namespace whose process is gone counts as dead.
func TestLeaseHolderOutlived(t *testing.T) {
	me := ThisProcess("r")
	if me.Host == "" || me.PID != os.Getpid() || len(me.Instance) != 16 {
		t.Fatalf("%+v", me)
	}
	parent := LeaseHolder{Replica: "r", Instance: "p", Host: me.Host, PID: os.Getppid()}
	for _, tc := range []struct {
		name string
		cur  LeaseHolder
		dead bool
	}{
		{"live process on this host", parent, false},
		{"exited process on this host", LeaseHolder{Instance: "x", Host: me.Host, PID: exitedPID(t)}, true},
		{"earlier process with this PID", LeaseHolder{Instance: "y", Host: me.Host, PID: me.PID}, true},
		{"exited PID on another host", LeaseHolder{Instance: "z", Host: "elsewhere", PID: exitedPID(t)}, false},
		{"no host recorded", LeaseHolder{Instance: "w", PID: exitedPID(t)}, false},
		{"itself", me, false},
	} {
		if got := me.outlived(tc.cur); got != tc.dead {
			t.Errorf("%s: outlived %v, want %v", tc.name, got, tc.dead)
		}
	}
}
