package catalog

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

func TestLease(t *testing.T) {
	// A bubble's clock: the renewals and the TTL are judged in fake time,
	// so a busy machine cannot make a held lease look expired.
	synctest.Test(t, func(t *testing.T) {
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
			if c := context.Cause(lb.Context()); !errors.Is(c, ErrLeaseLost) || !strings.Contains(c.Error(), "another replica took it over") {
				t.Fatalf("cause %v, want ErrLeaseLost naming the takeover", c)
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
	})
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

// hookStore runs hook before each PutIf; a non-nil error from it is
// returned instead of writing.
type hookStore struct {
	storage.Store
	mu   sync.Mutex
	n    int // PutIf calls so far
	hook func(ctx context.Context, n int, key string) error
}

func (h *hookStore) PutIf(ctx context.Context, key string, data []byte, ifMatch string) (storage.Info, error) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	if err := h.hook(ctx, n, key); err != nil {
		return storage.Info{}, err
	}
	return h.Store.PutIf(ctx, key, data, ifMatch)
}

func (h *hookStore) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// waitCalls waits (bounded) until the store saw at least n PutIf calls
// from l, or l is lost.
func waitCalls(t *testing.T, h *hookStore, n int, l *Lease) {
	t.Helper()
	for i := 0; h.calls() < n; i++ {
		if i == 1000 || l.Context().Err() != nil {
			t.Fatalf("%d PutIf calls, waited for %d; lease: %v", h.calls(), n, context.Cause(l.Context()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A zero or negative TTL means DefaultLeaseTTL: a live lease, not one that
// expires at once (or a renewal ticker that panics).
func TestLeaseDefaultTTL(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for i, ttl := range []time.Duration{0, -time.Second} {
		name := []string{"zero", "negative"}[i]
		before := time.Now()
		l, rec, err := AcquireLease(ctx, s, name, "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Expires.Sub(before) < DefaultLeaseTTL || DefaultLeaseTTL < time.Second {
			t.Errorf("ttl %v: expires %v after acquiring, default %v", ttl, rec.Expires.Sub(before), DefaultLeaseTTL)
		}
		if _, _, err := AcquireLease(ctx, s, name, "sha256:bb", LeaseHolder{Replica: "b", Instance: "b1"}, ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("ttl %v: another holder got the lease: %v", ttl, err)
		}
		l.Release(ctx)
	}
}

// A renewal that hangs on the store gives up well within the TTL, so the
// holder learns it may have lost the lease before another replica can
// take it over.
func TestLeaseRenewalBoundedByTTL(t *testing.T) {
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	var mu sync.Mutex
	var left time.Duration // the first renewal's time left
	h := &hookStore{Store: newStore(t), hook: func(ctx context.Context, n int, _ string) error {
		if n != 2 { // the first renewal (1 acquires, 3 releases)
			return nil
		}
		d, ok := ctx.Deadline()
		if !ok {
			t.Error("renewal without a deadline")
		}
		mu.Lock()
		left = time.Until(d)
		mu.Unlock()
		return nil
	}}
	l, _, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitCalls(t, h, 2, l)
	l.Release(ctx)
	mu.Lock()
	defer mu.Unlock()
	if left >= ttl {
		t.Fatalf("a renewal may take %v, the lease lasts %v", left, ttl)
	}
}

// One failed renewal (the store briefly unreachable) does not lose the
// lease: the next one renews it.
func TestLeaseSurvivesOneFailedRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl = time.Second
		h := &hookStore{Store: newStore(t), hook: func(_ context.Context, n int, _ string) error {
			if n == 2 { // the first renewal
				return errInjected
			}
			return nil
		}}
		l, _, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		waitCalls(t, h, 4, l) // the failed renewal and two good ones
		if err := l.Context().Err(); err != nil {
			t.Fatalf("lease lost after one failed renewal: %v", context.Cause(l.Context()))
		}
		rec, err := ReadLease(ctx, h, "x")
		if err != nil || rec.Instance != "a1" || !rec.Expires.After(time.Now()) {
			t.Fatalf("lease after renewals: %+v %v", rec, err)
		}
	})
}

// Losing the compare-and-swap to another writer (here: a replica whose
// lease has already expired writes between our read and our swap) makes
// AcquireLease read again and retry, not give up.
func TestLeaseRetriesAfterLostSwap(t *testing.T) {
	ctx := context.Background()
	base := newStore(t)
	expired := LeaseRecord{LeaseHolder: LeaseHolder{Replica: "b", Instance: "b1"}, Digest: "sha256:bb", Expires: time.Now().Add(-time.Minute)}
	h := &hookStore{Store: base, hook: func(ctx context.Context, n int, key string) error {
		if n == 1 {
			if _, err := base.PutIf(ctx, key, leaseData(expired), ""); err != nil {
				t.Errorf("the other writer: %v", err)
			}
		}
		return nil
	}}
	l, rec, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, time.Minute)
	if err != nil {
		t.Fatalf("after one lost swap: %v", err)
	}
	defer l.Release(ctx)
	if rec.Instance != "a1" || h.calls() != 2 {
		t.Fatalf("record %+v after %d swaps, want ours after 2", rec, h.calls())
	}
}

// A store that stops answering (each renewal fails after a stall, as a
// hung S3 endpoint's do) loses the holder its lease before the record it
// last wrote expires, when another replica may take it over, and the
// cause names the store's error. On the bubble's clock.
func TestLeaseOnHungStoreLostBeforeItExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl, stall = 3 * time.Second, 200 * time.Millisecond
		var hung sync.Once
		var since time.Time
		h := &hookStore{Store: newStore(t), hook: func(ctx context.Context, n int, _ string) error {
			if n < 3 { // acquired and renewed once, then the store hangs
				return nil
			}
			hung.Do(func() { since = time.Now() })
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(stall):
				return errInjected
			}
		}}
		l, _, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		<-l.Context().Done()
		lost := time.Now()
		rec, err := ReadLease(ctx, h.Store, "x")
		if err != nil {
			t.Fatal(err)
		}
		if !lost.Before(rec.Expires) {
			t.Errorf("lease lost %v after the store hung, %v after its record expired", lost.Sub(since), lost.Sub(rec.Expires))
		}
		// Nobody took the lease over: the message must not say so.
		if cause := context.Cause(l.Context()); !errors.Is(cause, ErrLeaseLost) || !errors.Is(cause, errInjected) || strings.Contains(cause.Error(), "another replica") {
			t.Errorf("cause %v, want ErrLeaseLost with the store's error and no other replica named", cause)
		}
	})
}
