package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// A later process of the same replica takes its predecessor's live turn
// at once; the predecessor (if it is in fact a live twin) does not take it
// back, and other replicas still wait out the interval.
func TestTakeTurnByLaterProcessOfReplica(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	t0 := time.Now()
	old := LeaseHolder{Replica: "r", Instance: "old", Started: t0}
	restarted := LeaseHolder{Replica: "r", Instance: "new", Started: t0.Add(time.Second)}
	other := LeaseHolder{Replica: "o", Instance: "o1", Started: t0.Add(2 * time.Second)}
	if ok, _, err := TakeTurn(ctx, s, "poll", old, time.Hour); err != nil || !ok {
		t.Fatalf("first: %v %v", ok, err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", other, time.Hour); err != nil || ok || rec.Instance != "old" {
		t.Fatalf("another replica took a live turn: %v %+v %v", ok, rec, err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", restarted, time.Hour); err != nil || !ok || rec.Instance != "new" {
		t.Fatalf("the restarted process waits on its predecessor's turn: %v %+v %v", ok, rec, err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", old, time.Hour); err != nil || ok || rec.Instance != "new" {
		t.Fatalf("the earlier process took the turn back: %v %+v %v", ok, rec, err)
	}
	if ok, _, err := TakeTurn(ctx, s, "poll", restarted, time.Hour); err != nil || ok {
		t.Fatalf("a process took its own live turn again: %v %v", ok, err)
	}
	// Records without a start time (written before it was recorded) are
	// earlier than any process that records one.
	if _, err := s.PutIf(ctx, TurnKey("gc"), leaseData(LeaseRecord{LeaseHolder: LeaseHolder{Replica: "r", Instance: "older"}, Expires: t0.Add(time.Hour)}), ""); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := TakeTurn(ctx, s, "gc", restarted, time.Hour); err != nil || !ok {
		t.Fatalf("a record without a start time: %v %v", ok, err)
	}
}

// ReleaseTurn ends the holder's own turn so anyone gets it next, and
// leaves another process's turn alone.
func TestReleaseTurn(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := LeaseHolder{Replica: "a", Instance: "a1", Started: time.Now()}
	b := LeaseHolder{Replica: "b", Instance: "b1", Started: time.Now()}
	if err := ReleaseTurn(ctx, s, "poll", a); err != nil {
		t.Fatalf("no turn yet: %v", err)
	}
	if err := ReleaseTurn(ctx, s, "Bad/Name", a); !errors.Is(err, ErrInvalidTurn) {
		t.Fatalf("bad name: %v", err)
	}
	if ok, _, err := TakeTurn(ctx, s, "poll", a, time.Hour); err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	if err := ReleaseTurn(ctx, s, "poll", b); err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadTurn(ctx, s, "poll"); err != nil || rec.Instance != "a1" || !time.Now().Before(rec.Expires) {
		t.Fatalf("another process released a's turn: %+v %v", rec, err)
	}
	if err := ReleaseTurn(ctx, s, "poll", a); err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadTurn(ctx, s, "poll"); err != nil || time.Now().Before(rec.Expires) {
		t.Fatalf("released turn still live: %+v %v", rec, err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", b, time.Hour); err != nil || !ok || rec.Instance != "b1" {
		t.Fatalf("next replica after the release: %v %+v %v", ok, rec, err)
	}
	if _, err := ReadTurn(ctx, s, "gc"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("missing turn: %v", err)
	}
}

// TakeTurn gives the named job to the first replica asking, for slightly
// less than the interval, and to no one else within it; a bad name or
// interval is refused, a corrupt record replaced. Catches TakeTurn's
// checks inverted, its key, and the interval's shortening computed wrongly.
func TestTakeTurnInterval(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := LeaseHolder{Replica: "a", Instance: "a1"}
	b := LeaseHolder{Replica: "b", Instance: "b1"}
	for _, every := range []time.Duration{0, -time.Second} {
		if _, _, err := TakeTurn(ctx, s, "gc", a, every); !errors.Is(err, ErrInvalidTurn) {
			t.Errorf("interval %v: %v", every, err)
		}
	}
	if _, _, err := TakeTurn(ctx, s, "Bad/Name", a, time.Hour); !errors.Is(err, ErrInvalidTurn) {
		t.Errorf("bad name: %v", err)
	}
	before := time.Now()
	ok, rec, err := TakeTurn(ctx, s, "gc", a, 100*time.Second)
	if err != nil || !ok || rec.Replica != "a" {
		t.Fatalf("first: %v %+v %v", ok, rec, err)
	}
	if lo, hi := before.Add(95*time.Second), time.Now().Add(95*time.Second); rec.Expires.Before(lo) || rec.Expires.After(hi) {
		t.Errorf("expires %v, want 95s after the take", rec.Expires)
	}
	if _, err := s.Stat(ctx, TurnKey("gc")); err != nil || TurnKey("gc") != "leases/gc" {
		t.Errorf("TurnKey %q: %v", TurnKey("gc"), err)
	}
	ok, rec, err = TakeTurn(ctx, s, "gc", b, 100*time.Second)
	if err != nil || ok || rec.Replica != "a" {
		t.Fatalf("second within the interval: %v %+v %v", ok, rec, err)
	}
	if _, err := s.Put(ctx, TurnKey("poll"), strings.NewReader("{garbage")); err != nil {
		t.Fatal(err)
	}
	if ok, rec, err := TakeTurn(ctx, s, "poll", b, time.Minute); err != nil || !ok || rec.Replica != "b" {
		t.Fatalf("over a corrupt record: %v %+v %v", ok, rec, err)
	}
}
