package metrics

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// Storage operation outcomes. Not-found and precondition failures are
// answers, not faults, and are told apart from errors.
const (
	OutcomeOK                 = "ok"
	OutcomeNotFound           = "not_found"
	OutcomePreconditionFailed = "precondition_failed"
	OutcomeCanceled           = "canceled"
	OutcomeError              = "error"
)

// Store returns s timing every operation in
// catalogsync_storage_operation_duration_seconds. The result keeps the
// optional interfaces s implements (io.Closer, catalog.LeftoverCleaner),
// so GC and shutdown see the same store; Unwrap returns s.
func (m *Metrics) Store(s storage.Store) storage.Store {
	t := &timedStore{s: s, m: m}
	closer, isCloser := s.(io.Closer)
	cleaner, isCleaner := s.(catalog.LeftoverCleaner)
	switch {
	case isCloser && isCleaner:
		return &struct {
			*timedStore
			io.Closer
			catalog.LeftoverCleaner
		}{t, closer, timedCleaner{t, cleaner}}
	case isCloser:
		return &struct {
			*timedStore
			io.Closer
		}{t, closer}
	case isCleaner:
		return &struct {
			*timedStore
			catalog.LeftoverCleaner
		}{t, timedCleaner{t, cleaner}}
	}
	return t
}

type timedStore struct {
	s storage.Store
	m *Metrics
}

// Unwrap returns the store being timed.
func (t *timedStore) Unwrap() storage.Store { return t.s }

func (t *timedStore) observe(ctx context.Context, op string, start time.Time, err error) {
	outcome := OutcomeOK
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrNotExist):
		outcome = OutcomeNotFound
	case errors.Is(err, storage.ErrPrecondition):
		outcome = OutcomePreconditionFailed
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		outcome = OutcomeCanceled
	default:
		outcome = OutcomeError
	}
	t.m.storageOps.with(op, outcome).observe(time.Since(start).Seconds())
}

func (t *timedStore) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	start := time.Now()
	info, err := t.s.Put(ctx, key, r)
	t.observe(ctx, "put", start, err)
	return info, err
}

// Get is timed until the stream is open (time to first byte): reading it
// is the caller's pace, not the store's.
func (t *timedStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := t.s.Get(ctx, key, offset, length)
	t.observe(ctx, "get", start, err)
	return rc, err
}

// GetInfo is timed as a get, or as the stat and get it falls back to
// where the store reads Info apart.
func (t *timedStore) GetInfo(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	if _, ok := t.s.(storage.InfoGetter); !ok {
		return storage.GetInfo(ctx, struct{ storage.Store }{t}, key, offset, length)
	}
	start := time.Now()
	rc, info, err := storage.GetInfo(ctx, t.s, key, offset, length)
	t.observe(ctx, "get", start, err)
	return rc, info, err
}

func (t *timedStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	start := time.Now()
	info, err := t.s.Stat(ctx, key)
	t.observe(ctx, "stat", start, err)
	return info, err
}

func (t *timedStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	start := time.Now()
	infos, err := t.s.List(ctx, prefix)
	t.observe(ctx, "list", start, err)
	return infos, err
}

func (t *timedStore) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := t.s.Delete(ctx, key)
	t.observe(ctx, "delete", start, err)
	return err
}

func (t *timedStore) PutIf(ctx context.Context, key string, data []byte, ifMatch string) (storage.Info, error) {
	start := time.Now()
	info, err := t.s.PutIf(ctx, key, data, ifMatch)
	t.observe(ctx, "putif", start, err)
	return info, err
}

type timedCleaner struct {
	t *timedStore
	c catalog.LeftoverCleaner
}

func (tc timedCleaner) Leftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	start := time.Now()
	infos, err := tc.c.Leftovers(ctx, prefix, olderThan, keys)
	tc.t.observe(ctx, "leftovers", start, err)
	return infos, err
}

func (tc timedCleaner) RemoveLeftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	start := time.Now()
	infos, err := tc.c.RemoveLeftovers(ctx, prefix, olderThan, keys)
	tc.t.observe(ctx, "remove_leftovers", start, err)
	return infos, err
}

// PutHeaders is timed as a put; the headers reach s where it keeps them.
func (t *timedStore) PutHeaders(ctx context.Context, key string, r io.Reader, h storage.Headers) (storage.Info, error) {
	start := time.Now()
	info, err := storage.PutHeaders(ctx, t.s, key, r, h)
	t.observe(ctx, "put", start, err)
	return info, err
}

// Copy is timed as a copy, inside s where it can (storage.Copy).
func (t *timedStore) Copy(ctx context.Context, dst, src string, h storage.Headers) (storage.Info, error) {
	start := time.Now()
	info, err := storage.Copy(ctx, t.s, dst, src, h)
	t.observe(ctx, "copy", start, err)
	return info, err
}
