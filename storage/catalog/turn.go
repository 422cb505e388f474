package catalog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// turnRoot holds cluster-wide leases ("leases/gc", "leases/poll"): work
// that replicas sharing a store do once per interval between them, not
// once each. GC never looks there (it works under catalogs/).
const turnRoot = "leases/"

// turnName is compiled at first use: its counted repeat makes a large
// program, and only a replica taking turns needs it.
var turnName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })

// ErrInvalidTurn is returned for a lease name that is not a short
// lower-case word.
var ErrInvalidTurn = errors.New("invalid cluster lease name")

// TurnKey is the object holding the named cluster-wide lease.
func TurnKey(name string) string { return turnRoot + name }

// TakeTurn claims the named cluster-wide job (e.g. "gc", "poll") for one
// interval: with the same record and compare-and-swap as a catalog's sync
// lease, it succeeds for the first replica that asks after the previous
// turn's interval ended, and the lease then lasts every, unrenewed, so the
// others asking within it get false and the holder's record. Replicas that
// each ask every interval so do the job once per interval between them.
//
// A turn outlives its process only when that process could not release it
// (ReleaseTurn, at a graceful stop): killed, or its store unreachable
// then. The instance is random per process, so a restart cannot know
// its leftovers by instance; it knows them by replica name and start time
// (LeaseHolder.succeeds) and takes such a turn at once instead of waiting
// out the interval.
func TakeTurn(ctx context.Context, s storage.Store, name string, h LeaseHolder, every time.Duration) (bool, LeaseRecord, error) {
	if !turnName().MatchString(name) {
		return false, LeaseRecord{}, fmt.Errorf("catalog: %q: %w", name, ErrInvalidTurn)
	}
	if every <= 0 {
		return false, LeaseRecord{}, fmt.Errorf("catalog: lease %s: interval %v: %w", name, every, ErrInvalidTurn)
	}
	key := TurnKey(name)
	cur, etag, err := readLease(ctx, s, key)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		etag = ""
	case errors.Is(err, ErrCorrupt):
		// Garbage is replaced under the same compare-and-swap.
	case err != nil:
		return false, LeaseRecord{}, err
	case time.Now().Before(cur.Expires) && !h.succeeds(cur.LeaseHolder):
		// Another live process's turn, or still this one's own.
		return false, cur, nil
	}
	// Slightly short of the interval: a replica asking exactly one
	// interval later (its own ticker) gets the next turn.
	rec := LeaseRecord{LeaseHolder: h, Expires: time.Now().Add(every - every/20)}
	if _, err := s.PutIf(ctx, key, leaseData(rec), etag); err != nil {
		if errors.Is(err, storage.ErrPrecondition) {
			// Another replica took this turn between the read and the swap.
			cur, _, _ := readLease(ctx, s, key)
			return false, cur, nil
		}
		return false, LeaseRecord{}, fmt.Errorf("catalog: %s: %w", key, err)
	}
	return true, rec, nil
}

// ReadTurn returns the named turn's record (expired ones too), or an error
// wrapping storage.ErrNotExist.
func ReadTurn(ctx context.Context, s storage.Store, name string) (LeaseRecord, error) {
	if !turnName().MatchString(name) {
		return LeaseRecord{}, fmt.Errorf("catalog: %q: %w", name, ErrInvalidTurn)
	}
	rec, _, err := readLease(ctx, s, TurnKey(name))
	return rec, err
}

// ReleaseTurn ends the named turn if h holds it, so the next replica to
// ask (or this replica's next start) gets it at once: what a graceful stop
// does. A turn another process took meanwhile is left alone (the swap is
// conditional on the record read).
func ReleaseTurn(ctx context.Context, s storage.Store, name string, h LeaseHolder) error {
	if !turnName().MatchString(name) {
		return fmt.Errorf("catalog: %q: %w", name, ErrInvalidTurn)
	}
	key := TurnKey(name)
	cur, etag, err := readLease(ctx, s, key)
	switch {
	case errors.Is(err, storage.ErrNotExist), errors.Is(err, ErrCorrupt):
		return nil
	case err != nil:
		return err
	case cur.Instance != h.Instance || !time.Now().Before(cur.Expires):
		return nil
	}
	cur.Expires = time.Time{}
	if _, err := s.PutIf(ctx, key, leaseData(cur), etag); err != nil && !errors.Is(err, storage.ErrPrecondition) {
		return fmt.Errorf("catalog: %s: %w", key, err)
	}
	return nil
}
