package catalog

// Garbage collection of published catalogs, through the storage.Store
// interface alone, so it works the same on every backend and keeps no
// state of its own: every decision is made from what a List shows (keys,
// sizes, modification times), the current pointers and meta.json.
//
// What is collected, per catalog:
//
//   - The current digest is never touched.
//   - Complete content (with meta.json) that is not current is ordered by
//     recency, meta.json's Created (the newest content was current most
//     recently, as tags move forward). The Keep newest stay; older ones go
//     once inactive for Grace.
//   - Over all catalogs, when the kept non-current content adds up to more
//     than MaxInactiveBytes, the least recent goes first (LRU), again only
//     once inactive for Grace; the size cap may cut into the Keep newest.
//   - Incomplete content (no meta.json: an aborted or dead writer) goes
//     once nothing under it was written for Grace.
//   - With Catalogs set (and not empty), a catalog not in it goes entirely
//     (pointer first) once none of its objects was written for
//     UnconfiguredAge (24h): replicas with another list (a rolling update,
//     a shared bucket) keep the catalogs they configure touched, by
//     publishing and polling them and with MarkConfigured. No list, or an
//     empty one, never deletes a catalog: it says nothing about what is
//     wanted.
//   - Interrupted writes under catalogs/ kept outside the keys (S3
//     multipart uploads, the fs backend's temp files) go once older than
//     LeftoverAge, for stores that implement LeftoverCleaner.
//
// When a digest stopped being current is not recorded anywhere, and need
// not be: the current pointer's modification time is the time of the last
// swap, and since then the pointer has named only the current digest. So
// every other digest has been out of reach of new readers at least since
// then: its "inactive since" is the later of that swap and its own last
// write. That bound is exact for the digest the last swap replaced and
// conservative for older ones; its cost is that a catalog whose pointer
// moves more often than Grace keeps its old content until it is quiet for
// Grace. Pointers are read when GC plans, not taken from its listing, so
// a swap in between counts. Clocks of GC and store are assumed to agree
// within a small part of Grace.
//
// A digest is deleted meta.json first, which makes it incomplete (Publish
// refuses it, a sync writes it anew). GC then re-reads the pointer: a
// publisher that moved it back to this digest meanwhile (a tag moved back)
// gets meta.json restored. A publisher whose check of the content came
// before the delete and whose swap after the re-read would still point at
// deleted content; GC reports that as a problem, and the next sync of the
// catalog writes the content again.

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// Defaults of GCOptions' zero values.
const (
	DefaultKeep        = 2
	DefaultGrace       = time.Hour
	DefaultLeftoverAge = 24 * time.Hour
	// DefaultUnconfiguredAge is how long a catalog missing from the list
	// must have been untouched before it is deleted.
	DefaultUnconfiguredAge = 24 * time.Hour
)

// GCOptions configures GC. The zero value is a safe policy: the defaults,
// nothing deleted for being unconfigured.
type GCOptions struct {
	// Keep is how many non-current complete digests each catalog keeps
	// besides the current one: 0 means DefaultKeep, negative none.
	Keep int
	// MaxInactiveBytes caps the bytes of non-current content kept over all
	// catalogs; the least recent goes first. 0 means no cap.
	MaxInactiveBytes int64
	// Grace is how long content must have been out of reach (not current,
	// not written to) before it is deleted, so readers that found it
	// before finish. 0 means DefaultGrace, negative none.
	Grace time.Duration
	// LeftoverAge is how old an interrupted write must be before it is
	// removed: 0 means DefaultLeftoverAge, negative any age.
	LeftoverAge time.Duration
	// Catalogs is the configured set of catalog names: catalogs not in it
	// are deleted once untouched for UnconfiguredAge. nil or empty deletes
	// no catalog.
	Catalogs []string
	// UnconfiguredAge is how long a catalog not in Catalogs must have had
	// no object written (no publish, poll record, lease or MarkConfigured
	// by any replica) before it is deleted; never less than Grace. 0 means
	// DefaultUnconfiguredAge, negative Grace alone.
	UnconfiguredAge time.Duration
	// DryRun deletes nothing; the report lists what would go.
	DryRun bool
	// Log receives a line per deletion (default: discarded).
	Log *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// GCReason says why GC deleted or kept something.
type GCReason string

// The reasons GC gives.
const (
	GCCurrent        GCReason = "current"
	GCRecent         GCReason = "among the newest kept"
	GCInGrace        GCReason = "inactive for less than the grace period"
	GCWriting        GCReason = "incomplete, written within the grace period"
	GCUnknownFormat  GCReason = "meta.json of an unknown format"
	GCRepublished    GCReason = "became current again during gc"
	GCOld            GCReason = "older than the newest kept"
	GCOverSize       GCReason = "least recent over the inactive size cap"
	GCIncomplete     GCReason = "incomplete"
	GCRemovedCatalog GCReason = "catalog no longer configured"
	GCRecentlyUsed   GCReason = "not configured here, but touched within the unconfigured age"
	GCLeftover       GCReason = "interrupted write"
	GCReferenced     GCReason = "its lines are shared by content kept"
	GCStatic         GCReason = "the static layout holds it"
)

// GCItem is one unit GC deleted or kept: a digest's content, a whole
// catalog, or an interrupted write.
type GCItem struct {
	// Catalog is the catalog's name ("" for a leftover outside catalogs).
	Catalog string `json:"catalog,omitempty"`
	// Digest is the content's digest; "" for a whole catalog or leftover.
	Digest string   `json:"digest,omitempty"`
	Reason GCReason `json:"reason"`
	Keys   []string `json:"keys"`
	Bytes  int64    `json:"bytes"`
	// Created is meta.json's Created, for complete content.
	Created time.Time `json:"created,omitzero"`
	// InactiveSince bounds when the content was last reachable or
	// written, for non-current content.
	InactiveSince time.Time `json:"inactiveSince,omitzero"`
}

// GCReport is what GC did, or with DryRun would do.
type GCReport struct {
	DryRun       bool     `json:"dryRun"`
	Deleted      []GCItem `json:"deleted"`
	Kept         []GCItem `json:"kept"`
	DeletedBytes int64    `json:"deletedBytes"`
	KeptBytes    int64    `json:"keptBytes"`
	// InactiveBytes is the non-current complete content left (the figure
	// MaxInactiveBytes caps).
	InactiveBytes int64 `json:"inactiveBytes"`
	// Problems are things GC left alone, or found wrong, and why.
	Problems []string `json:"problems,omitempty"`
}

// LeftoverCleaner is implemented by stores that keep the data of
// interrupted writes apart from their objects: S3 multipart uploads, the
// fs backend's temp files. GC passes prefix "catalogs/", so it never
// touches writes of anything else sharing the store, and as keys the
// objects that may have interrupted writes (MinIO lists those only by
// exact key).
type LeftoverCleaner interface {
	// Leftovers lists interrupted writes of keys under prefix older than
	// olderThan (<= 0: all).
	Leftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error)
	// RemoveLeftovers removes them and returns what it removed.
	RemoveLeftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error)
}

// gcRun carries one GC's state.
type gcRun struct {
	s     storage.Store
	o     GCOptions
	now   time.Time
	grace time.Duration
	// unconfigured is how long an unlisted catalog must be untouched.
	unconfigured time.Duration
	// keepNewest is how many newest digests stay whatever their age.
	keepNewest int
	log        *slog.Logger
	rep        GCReport
	// deletes run in order once everything is planned.
	deletes []func(context.Context) error
	// sources are, per catalog and digest, the digests whose objects its
	// catalog.jsonl reads (Meta.Sources); protected is what the current
	// and the kept content read, transitively, which no delete takes.
	sources   map[string]map[string][]string
	protected map[string]map[string]bool
	// roots are current content not listed (published after the listing).
	roots [][2]string
	// static is, per catalog, the digest its static layout holds
	// (catalogs/<name>/static) when that is not the current one.
	static map[string]string
}

// GC deletes what the policy in opts no longer needs and reports what it
// deleted and kept. It stops at the first store failure, returning what it
// did so far.
func GC(ctx context.Context, s storage.Store, opts GCOptions) (GCReport, error) {
	r := newGCRun(s, opts)
	infos, err := s.List(ctx, keyRoot)
	if err != nil {
		return r.rep, fmt.Errorf("catalog: gc: %w", err)
	}
	hints, err := r.plan(ctx, gcGroup(infos))
	if err != nil {
		return r.rep, err
	}
	r.protect()
	for _, del := range r.deletes {
		if err := del(ctx); err != nil {
			return r.rep, err
		}
	}
	if err := r.leftovers(ctx, hints); err != nil {
		return r.rep, err
	}
	for _, it := range r.rep.Deleted {
		r.rep.DeletedBytes += it.Bytes
	}
	for _, it := range r.rep.Kept {
		r.rep.KeptBytes += it.Bytes
	}
	return r.rep, nil
}

// newGCRun resolves opts' zero values to the defaults.
func newGCRun(s storage.Store, opts GCOptions) *gcRun {
	r := &gcRun{s: s, o: opts, log: cmp.Or(opts.Log, slog.New(slog.DiscardHandler)), now: time.Now()}
	if opts.Now != nil {
		r.now = opts.Now()
	}
	switch {
	case opts.Grace == 0:
		r.grace = DefaultGrace
	case opts.Grace > 0:
		r.grace = opts.Grace
	}
	r.unconfigured = r.grace
	switch {
	case opts.UnconfiguredAge == 0:
		r.unconfigured = max(r.grace, DefaultUnconfiguredAge)
	case opts.UnconfiguredAge > 0:
		r.unconfigured = max(r.grace, opts.UnconfiguredAge)
	}
	r.keepNewest = opts.Keep
	switch {
	case r.keepNewest == 0:
		r.keepNewest = DefaultKeep
	case r.keepNewest < 0:
		r.keepNewest = 0
	}
	r.rep = GCReport{DryRun: opts.DryRun, Deleted: []GCItem{}, Kept: []GCItem{}}
	r.sources = map[string]map[string][]string{}
	r.static = map[string]string{}
	return r
}

func (r *gcRun) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.rep.Problems = append(r.rep.Problems, msg)
	r.log.Warn("gc: " + msg)
}

func (r *gcRun) keep(it GCItem) { r.rep.Kept = append(r.rep.Kept, it) }

// deleted records an item as deleted now (or, dry, as to be deleted).
func (r *gcRun) deleted(it GCItem) {
	r.rep.Deleted = append(r.rep.Deleted, it)
	verb := "gc: deleted"
	if r.o.DryRun {
		verb = "gc: would delete"
	}
	r.log.Info(verb, "catalog", it.Catalog, "digest", it.Digest, "reason", string(it.Reason), "bytes", it.Bytes, "objects", len(it.Keys))
}
