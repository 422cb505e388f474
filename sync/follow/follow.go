// Package follow tells a status writer when a catalog's published
// pointer may have changed, in a cluster that reads a store another
// deployment publishes to: from bucket notifications (Changed), and by
// polling each catalog's pointer for a new ETag (Run), the fallback for
// notifications lost or not configured. Nothing it is told is trusted
// beyond "read this catalog's pointer again": the writer reads it.
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// DefaultPollInterval is how often Run checks every pointer when no
// interval is given: the longest a lost notification delays a status.
const DefaultPollInterval = 30 * time.Second

// ErrIgnored wraps why a notification named no pointer to read again.
var ErrIgnored = errors.New("notification ignored")

// Refresher reads a catalog's pointer again (status.Writer).
type Refresher interface {
	Refresh(name string)
}

// Catalogs is the cluster's catalogs (status.ClusterCatalogs).
type Catalogs interface {
	// Names lists them; ok is false until the first list.
	Names() (names []string, ok bool)
	// Has reports whether the named one exists, in constant time: each
	// notification record asks.
	Has(name string) bool
}

// Follower follows the pointers of a cluster's catalogs.
type Follower struct {
	store   storage.Store
	cats    Catalogs
	refresh Refresher
	bucket  string
	prefix  string
	every   time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	etags map[string]string // per catalog, the pointer's ETag last seen ("" none)

	notified, polledChanges, ignored atomic.Int64
}

// Option configures a Follower.
type Option func(*Follower)

// WithBucket sets the bucket and key prefix notifications must name
// (those of the store); without it, notifications' bucket is not
// checked and keys have no prefix.
func WithBucket(bucket, prefix string) Option {
	return func(f *Follower) {
		f.bucket = bucket
		f.prefix = strings.TrimSuffix(prefix, "/")
		if f.prefix != "" {
			f.prefix += "/"
		}
	}
}

// WithPollInterval sets how often Run checks every pointer
// (DefaultPollInterval).
func WithPollInterval(d time.Duration) Option {
	return func(f *Follower) {
		if d > 0 {
			f.every = d
		}
	}
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(f *Follower) { f.log = l } }

// New returns a Follower of cats' pointers in store, telling r.
func New(store storage.Store, cats Catalogs, r Refresher, opts ...Option) *Follower {
	f := &Follower{store: store, cats: cats, refresh: r, every: DefaultPollInterval,
		log: slog.New(slog.DiscardHandler), etags: map[string]string{}}
	for _, fn := range opts {
		fn(f)
	}
	return f
}

// Stats counts what the Follower did.
type Stats struct {
	// Notified: notifications that named a known catalog's pointer;
	// Ignored: those that did not. Polled: pointers a poll found changed.
	Notified, Ignored, Polled int64
}

// Stats returns the counts so far.
func (f *Follower) Stats() Stats {
	return Stats{Notified: f.notified.Load(), Ignored: f.ignored.Load(), Polled: f.polledChanges.Load()}
}

// maxKey bounds the object keys looked at: S3's own limit.
const maxKey = 1024

// Changed handles a notification that the object key of bucket changed:
// when it is the pointer of a catalog of the cluster, the catalog's
// pointer is read again. Otherwise it returns an error wrapping
// ErrIgnored, saying why.
func (f *Follower) Changed(bucket, key string) error {
	name, err := f.nameOf(bucket, key)
	if err != nil {
		f.ignored.Add(1)
		return err
	}
	if !f.cats.Has(name) {
		f.ignored.Add(1)
		return fmt.Errorf("%w: no ClusterCatalog %s", ErrIgnored, name)
	}
	f.notified.Add(1)
	f.refresh.Refresh(name)
	return nil
}

// nameOf is the catalog whose pointer key is.
func (f *Follower) nameOf(bucket, key string) (string, error) {
	if len(key) > maxKey || len(bucket) > maxKey {
		return "", fmt.Errorf("%w: key or bucket name of more than %d bytes", ErrIgnored, maxKey)
	}
	if f.bucket != "" && bucket != f.bucket {
		return "", fmt.Errorf("%w: another bucket", ErrIgnored)
	}
	rest, ok := strings.CutPrefix(key, f.prefix)
	if !ok {
		return "", fmt.Errorf("%w: key outside the store's prefix", ErrIgnored)
	}
	inner, _ := strings.CutPrefix(rest, "catalogs/")
	name, _ := strings.CutSuffix(inner, "/current")
	if !catalog.ValidName(name) || catalog.PointerKey(name) != rest {
		return "", fmt.Errorf("%w: not a catalog's pointer", ErrIgnored)
	}
	return name, nil
}

// Run polls every catalog's pointer each interval until ctx ends, and
// reads again those whose ETag changed (appeared, or went away). It
// returns ctx's error.
func (f *Follower) Run(ctx context.Context) error {
	t := time.NewTicker(f.every)
	defer t.Stop()
	failures := 0
	for {
		if err := f.PollOnce(ctx); err != nil && ctx.Err() == nil {
			failures++
			lvl := slog.LevelDebug
			if failures == 1 || failures%20 == 0 {
				lvl = slog.LevelWarn
			}
			f.log.Log(ctx, lvl, "poll published pointers", "err", err, "failures", failures)
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// PollOnce checks every catalog's pointer once; it returns the first
// error met (the other catalogs are still checked).
func (f *Follower) PollOnce(ctx context.Context) error {
	names, ok := f.cats.Names()
	if !ok {
		return nil // not listed yet: the first list reads every pointer
	}
	var first error
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		seen[name] = true
		etag, err := f.etag(ctx, name)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		f.mu.Lock()
		prev, had := f.etags[name]
		f.etags[name] = etag
		f.mu.Unlock()
		switch {
		case had && prev != etag:
			f.polledChanges.Add(1)
			f.log.Debug("published pointer changed", "catalog", name)
			f.refresh.Refresh(name)
		case !had:
			// First sight: a publish between the writer's first read
			// and this Stat would otherwise wait for the next one.
			f.refresh.Refresh(name)
		}
	}
	f.mu.Lock()
	for name := range f.etags {
		if !seen[name] {
			delete(f.etags, name)
		}
	}
	f.mu.Unlock()
	return first
}

// etag is the pointer's ETag, "" when there is none.
func (f *Follower) etag(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	in, err := f.store.Stat(ctx, catalog.PointerKey(name))
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return in.ETag, nil
}
