package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// healthRoot holds the objects written to probe the store, one per
// process and removed at once; GC and readers never look there.
const healthRoot = "health/"

// How often Health probes: while the store takes writes, and while it
// does not (so readiness comes back soon after the operator's fix).
const (
	HealthEvery   = 30 * time.Second
	healthFailing = 2 * time.Second
	healthTimeout = 10 * time.Second
)

// storeError is a Health error: its text names the store, and it wraps
// storage.ErrDenied when the store refuses writes.
type storeError struct {
	msg   string
	cause error
}

func (e *storeError) Error() string { return e.msg }
func (e *storeError) Unwrap() error { return e.cause }

// Health knows whether the store takes this process's writes: it writes
// and deletes a small object at each Check. Its errors name the store's
// configured location (a directory, s3://bucket/prefix), never the
// backend's own error, which may name endpoints: that is logged.
type Health struct {
	s         storage.Store
	location  string
	key       string
	log       *slog.Logger
	onRecover func()

	mu      sync.Mutex
	err     error
	checked bool
}

// NewHealth probes s, known to operators as location, under a key of the
// holder's instance. onRecover (may be nil) runs when a check succeeds
// after one failed.
func NewHealth(s storage.Store, location string, h LeaseHolder, log *slog.Logger, onRecover func()) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	inst := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, h.Instance)
	return &Health{s: s, location: location, key: healthRoot + "probe-" + inst, log: log, onRecover: onRecover}
}

// Check writes and deletes the probe object now, and keeps and returns
// the outcome (nil: the store takes writes).
func (h *Health) Check(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	raw := h.probe(pctx)
	if ctx.Err() != nil {
		return h.Err() // stopping: this says nothing of the store
	}
	var err error
	switch {
	case raw == nil:
	case errors.Is(raw, storage.ErrDenied):
		err = &storeError{fmt.Sprintf("store %s refuses this process's writes (permissions, a read-only mount or bucket policy): "+
			"not worth retrying until that is fixed", h.location), storage.ErrDenied}
	default:
		err = &storeError{msg: fmt.Sprintf("store %s did not take a probe write", h.location)}
	}
	h.mu.Lock()
	prev, first := h.err, !h.checked
	h.err, h.checked = err, true
	h.mu.Unlock()
	switch {
	case err != nil && (first || prev == nil || prev.Error() != err.Error()):
		h.log.Warn("store probe failed: not ready", "store", h.location, "err", raw)
	case err == nil && prev != nil:
		h.log.Info("store takes writes again: ready", "store", h.location)
		if h.onRecover != nil {
			h.onRecover()
		}
	}
	return err
}

func (h *Health) probe(ctx context.Context) error {
	if _, err := h.s.Put(ctx, h.key, strings.NewReader(time.Now().UTC().Format(time.RFC3339Nano)+"\n")); err != nil {
		return err
	}
	return h.s.Delete(ctx, h.key)
}

// errUnprobed is Ready's answer before the first check ends.
var errUnprobed = errors.New("store not probed yet")

// Ready is Err once the first check ended, errUnprobed before: a replica
// is ready when it knows its store takes writes, and serves reads before.
func (h *Health) Ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checked {
		return errUnprobed
	}
	return h.err
}

// Err is the last check's outcome: nil while the store takes writes (and
// before the first check).
func (h *Health) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Denied is Err when the store refuses writes (wrapping
// storage.ErrDenied), nil otherwise: a sync then cannot succeed, where a
// store that did not answer may well answer the sync.
func (h *Health) Denied() error {
	if err := h.Err(); errors.Is(err, storage.ErrDenied) {
		return err
	}
	return nil
}

// Run checks every HealthEvery while the store takes writes and more often
// while it does not, until ctx ends; the first check is the caller's.
func (h *Health) Run(ctx context.Context) {
	for {
		wait := HealthEvery
		if h.Err() != nil {
			wait = healthFailing
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		_ = h.Check(ctx) // kept for Err; transitions are logged
	}
}
