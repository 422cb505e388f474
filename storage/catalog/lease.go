package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// leaseFile is catalogs/<name>/syncing: which replica is pulling which
// digest of the catalog, so replicas sharing a store that all receive the
// same webhook pull and write a digest once. GC ignores it (it is not a
// digest directory) until the catalog itself is removed.
const leaseFile = "syncing"

// DefaultLeaseTTL is how long a lease lasts without renewal: a replica that
// dies holding one delays the others by at most this much (its own restart
// takes it over at once).
const DefaultLeaseTTL = 15 * time.Second

var (
	// ErrLeaseHeld is returned by AcquireLease while another live replica
	// holds the catalog's lease.
	ErrLeaseHeld = errors.New("another replica is syncing this catalog")
	// ErrLeaseLost is the cause of a held lease's context when another
	// replica took it over, or may soon (renewals failed until a quarter
	// TTL before the lease expires); the wrapping error says which.
	ErrLeaseLost = errors.New("sync lease lost")
)

// LeaseHolder names a lease's owner. Instance is unique to one process and
// is what a lease belongs to: no other process, of the same replica or
// not, takes over a live lease. Replica is a readable name (the pod's).
// Host and PID let a process on the same host and in the same PID
// namespace tell that the holder is gone, and take its lease at once
// instead of after the TTL. Started orders the processes of one replica:
// a turn (TakeTurn) left by an earlier one is its predecessor's. Make one
// with ThisProcess.
type LeaseHolder struct {
	Replica  string    `json:"replica"`
	Instance string    `json:"instance"`
	Host     string    `json:"host,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Started  time.Time `json:"started,omitzero"`
}

// LeaseRecord is the stored lease.
type LeaseRecord struct {
	LeaseHolder
	Digest  string    `json:"digest"`
	Expires time.Time `json:"expires"`
}

// Lease is a lease this process holds. Its context is cancelled (cause
// ErrLeaseLost) if it is lost; Release ends it.
type Lease struct {
	s      storage.Store
	key    string
	rec    LeaseRecord
	ttl    time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	etag   string // owned by the renewing goroutine until done closes
}

// AcquireLease takes name's lease for digest, for ttl (0: DefaultLeaseTTL),
// and keeps renewing it until Release. It fails with ErrLeaseHeld (and
// returns the holder's record) while another process's lease is live.
// Expired leases, and leases of a process known to be dead (see
// LeaseHolder), are taken over.
func AcquireLease(ctx context.Context, s storage.Store, name, digest string, h LeaseHolder, ttl time.Duration) (*Lease, LeaseRecord, error) {
	if err := checkName(name); err != nil {
		return nil, LeaseRecord{}, err
	}
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	key := catalogPrefix(name) + leaseFile
	for range 10 {
		cur, etag, err := readLease(ctx, s, key)
		switch {
		case errors.Is(err, storage.ErrNotExist):
			etag = ""
		case errors.Is(err, ErrCorrupt):
			// Garbage is replaced under the same compare-and-swap.
		case err != nil:
			return nil, LeaseRecord{}, err
		case cur.Instance != h.Instance && time.Now().Before(cur.Expires) && !h.outlived(cur.LeaseHolder):
			return nil, cur, fmt.Errorf("catalog: %s: %w (%s, digest %s, until %s)", name, ErrLeaseHeld,
				cur.Replica, cur.Digest, cur.Expires.Format(time.RFC3339))
		}
		rec := LeaseRecord{LeaseHolder: h, Digest: digest, Expires: time.Now().Add(ttl)}
		in, err := s.PutIf(ctx, key, leaseData(rec), etag)
		if errors.Is(err, storage.ErrPrecondition) {
			continue // someone else wrote it between the read and the swap
		}
		if err != nil {
			return nil, LeaseRecord{}, fmt.Errorf("catalog: %s: %w", key, err)
		}
		l := &Lease{s: s, key: key, rec: rec, ttl: ttl, etag: in.ETag, done: make(chan struct{})}
		l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
		go l.renew()
		return l, rec, nil
	}
	return nil, LeaseRecord{}, fmt.Errorf("catalog: %s: too much contention: %w", key, storage.ErrPrecondition)
}

// Context is cancelled when the lease is lost or released.
func (l *Lease) Context() context.Context { return l.ctx }

// renew renews the lease every TTL/3 until it is released or lost. The
// holder gives it up a quarter TTL before the record it last wrote
// expires: another replica may take over only after that expiry, and the
// quarter leaves the holder's writes under way time to end first. A hung
// store thus loses the lease two missed renewals in, not after the TTL.
func (l *Lease) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	giveUp := l.rec.Expires.Add(-l.ttl / 4)
	lost := time.NewTimer(time.Until(giveUp))
	defer lost.Stop()
	if !leaseKeepsTime {
		lost.Stop()
	}
	var failed error // the store's last renewal error
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-lost.C:
			l.lose(failed)
			return
		case <-t.C:
		}
		rec := l.rec
		rec.Expires = time.Now().Add(l.ttl)
		ctx, cancel := context.WithTimeout(l.ctx, min(l.ttl/3, time.Until(giveUp)))
		in, err := l.s.PutIf(ctx, l.key, leaseData(rec), l.etag)
		cancel()
		switch {
		case err == nil:
			l.etag, giveUp, failed = in.ETag, rec.Expires.Add(-l.ttl/4), nil
			if leaseKeepsTime {
				lost.Reset(time.Until(giveUp))
			}
		case errors.Is(err, storage.ErrPrecondition):
			l.cancel(fmt.Errorf("%w: another replica took it over", ErrLeaseLost))
			return
		case failed == nil || !errors.Is(err, context.DeadlineExceeded):
			// A store error says more than the deadline that cut a
			// later renewal short.
			failed = err
		}
	}
}

// lose ends a lease whose renewals failed until it was about to expire:
// another replica may take it over, so this one stops rather than write
// twice.
func (l *Lease) lose(failed error) {
	if failed == nil {
		failed = errors.New("no renewal answered")
	}
	l.cancel(fmt.Errorf("%w: renewals failing: %w", ErrLeaseLost, failed))
}

// Release ends the lease: it is marked expired (only if still ours), so a
// waiting replica goes on at once.
func (l *Lease) Release(ctx context.Context) {
	l.cancel(nil)
	<-l.done
	rec := l.rec
	rec.Expires = time.Time{}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = l.s.PutIf(ctx, l.key, leaseData(rec), l.etag)
}

// ReadLease returns name's lease record (expired ones too), or an error
// wrapping storage.ErrNotExist.
func ReadLease(ctx context.Context, s storage.Store, name string) (LeaseRecord, error) {
	if err := checkName(name); err != nil {
		return LeaseRecord{}, err
	}
	rec, _, err := readLease(ctx, s, catalogPrefix(name)+leaseFile)
	return rec, err
}

func readLease(ctx context.Context, s storage.Store, key string) (LeaseRecord, string, error) {
	var rec LeaseRecord
	etag, err := readControl(ctx, s, key, &rec)
	if err != nil {
		return LeaseRecord{}, etag, err
	}
	return rec, etag, nil
}

func leaseData(r LeaseRecord) []byte {
	b, _ := json.Marshal(r)
	return append(b, '\n')
}
