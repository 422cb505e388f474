package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/catalogsync/catalogsync/storage"
)

// refusing is a real store whose writes fail while deny is set, as a
// backend reports a permission problem (wrapping storage.ErrDenied), or
// with a bare error while broken is set.
type refusing struct {
	storage.Store
	deny, broken atomic.Bool
}

func (r *refusing) fail() error {
	switch {
	case r.deny.Load():
		return fmt.Errorf("fs: put: permission denied at https://endpoint.example (%w)", storage.ErrDenied)
	case r.broken.Load():
		return errors.New("connection refused by https://endpoint.example")
	}
	return nil
}

func (r *refusing) Put(ctx context.Context, key string, rd io.Reader) (storage.Info, error) {
	if err := r.fail(); err != nil {
		return storage.Info{}, err
	}
	return r.Store.Put(ctx, key, rd)
}

// Health names the store's location (not the backend's error), tells a
// refusal from other failures, calls onRecover once when writes work
// again, and leaves no probe object behind.
func TestHealthProbesWrites(t *testing.T) {
	ctx := context.Background()
	s := &refusing{Store: newStore(t)}
	var recovered atomic.Int32
	h := NewHealth(s, "/srv/store", ThisProcess("r"), nil, func() { recovered.Add(1) })
	if err := h.Check(ctx); err != nil || h.Err() != nil || h.Denied() != nil {
		t.Fatalf("writable store: %v", err)
	}
	s.deny.Store(true)
	err := h.Check(ctx)
	if !errors.Is(err, storage.ErrDenied) || !strings.Contains(err.Error(), "store /srv/store refuses") ||
		strings.Contains(err.Error(), "endpoint") || h.Denied() == nil || h.Err() == nil {
		t.Fatalf("refused writes: %v", err)
	}
	s.deny.Store(false)
	s.broken.Store(true)
	err = h.Check(ctx)
	if err == nil || errors.Is(err, storage.ErrDenied) || !strings.Contains(err.Error(), "/srv/store") ||
		strings.Contains(err.Error(), "endpoint") || h.Denied() != nil {
		t.Fatalf("broken store: %v (denied %v)", err, h.Denied())
	}
	if recovered.Load() != 0 {
		t.Fatal("onRecover ran while failing")
	}
	s.broken.Store(false)
	if err := h.Check(ctx); err != nil || recovered.Load() != 1 {
		t.Fatalf("recovered: %v, onRecover ran %d times", err, recovered.Load())
	}
	if err := h.Check(ctx); err != nil || recovered.Load() != 1 {
		t.Fatalf("still healthy: %v, onRecover ran %d times", err, recovered.Load())
	}
	if left, err := s.List(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("left in the store: %v %v", left, err)
	}
}

// A replica is not ready before its first probe has answered, and a
// probe cut short by shutdown does not make it ready.
func TestHealthNotReadyBeforeFirstProbe(t *testing.T) {
	s := &refusing{Store: newStore(t)}
	h := NewHealth(s, "/srv/store", ThisProcess("r"), nil, nil)
	if err := h.Ready(); err == nil || h.Err() != nil || h.Denied() != nil {
		t.Fatalf("before any probe: ready %v, err %v, denied %v", err, h.Err(), h.Denied())
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.Check(cancelled)
	if h.Ready() == nil {
		t.Fatal("ready after a probe cut short")
	}
	if err := h.Check(context.Background()); err != nil || h.Ready() != nil {
		t.Fatalf("after a probe: %v, ready %v", err, h.Ready())
	}
	s.deny.Store(true)
	if err := h.Check(context.Background()); !errors.Is(h.Ready(), storage.ErrDenied) {
		t.Fatalf("refused writes: check %v, ready %v", err, h.Ready())
	}
}
