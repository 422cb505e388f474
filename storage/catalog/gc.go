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
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

// gcDir is one digest's directory as listed.
type gcDir struct {
	digest string
	objs   []storage.Info
	// metaKey is meta.json's key, "" when there is none.
	metaKey string
	metaMod time.Time
	newest  time.Time
	bytes   int64
}

// gcCatalog is everything listed under one catalogs/<name>/.
type gcCatalog struct {
	name    string
	all     []storage.Info
	current *storage.Info // as listed; nil when there was none
	dirs    map[string]*gcDir
	newest  time.Time
	bytes   int64
}

// gcCandidate is non-current complete content under consideration.
type gcCandidate struct {
	name    string
	dir     *gcDir
	created time.Time
	since   time.Time
	reason  GCReason
	evict   bool
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
	return r
}

// configured returns the listed catalogs as a set, nil when every catalog
// counts as listed (no list given, or an empty one: see GCOptions).
func (r *gcRun) configured() map[string]bool {
	switch {
	case r.o.Catalogs != nil && len(r.o.Catalogs) == 0:
		r.problem("the catalog list is empty: no catalog deleted for being unconfigured")
	case r.o.Catalogs != nil:
		configured := map[string]bool{}
		for _, n := range r.o.Catalogs {
			configured[n] = true
		}
		return configured
	}
	return nil
}

// plan decides, catalog by catalog, what goes and what stays, queueing
// the deletes; it returns the keys whose leftovers to look for.
func (r *gcRun) plan(ctx context.Context, cats map[string]*gcCatalog) (hints []string, err error) {
	configured := r.configured()
	var pool []*gcCandidate
	for _, name := range gcSortedKeys(cats) {
		c := cats[name]
		if !ValidName(name) {
			r.problem("%s: not a catalog name, left alone", keyRoot+name)
			continue
		}
		for dir := range c.dirs {
			p := catalogPrefix(name) + dir + "/"
			hints = append(hints, p+contentFile, p+deltaFile, p+indexFile, p+graphqlFile, p+filesFile)
		}
		if configured != nil && !configured[name] {
			r.planRemoval(c)
			continue
		}
		cands, err := r.planCatalog(ctx, c)
		if err != nil {
			return nil, err
		}
		pool = append(pool, r.planAge(cands)...)
	}
	r.capSize(pool)
	return hints, nil
}

// planAge keeps the newest r.keepNewest candidates and those in grace (the size
// cap may still take them, so they are returned as its pool); older ones
// go.
func (r *gcRun) planAge(cands []*gcCandidate) (pool []*gcCandidate) {
	for i, cd := range cands {
		switch {
		case i < r.keepNewest:
			cd.reason = GCRecent
			pool = append(pool, cd)
		case r.pastGrace(cd.since):
			r.planContent(cd, GCOld)
		default:
			cd.reason = GCInGrace
			pool = append(pool, cd)
		}
	}
	return pool
}

func gcSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gcGroup sorts a listing of catalogs/ by catalog and digest directory.
// Objects directly under catalogs/ are no catalog's and are ignored.
func gcGroup(infos []storage.Info) map[string]*gcCatalog {
	cats := map[string]*gcCatalog{}
	for _, in := range infos {
		name, rest, ok := strings.Cut(strings.TrimPrefix(in.Key, keyRoot), "/")
		if !ok {
			continue
		}
		c := cats[name]
		if c == nil {
			c = &gcCatalog{name: name, dirs: map[string]*gcDir{}}
			cats[name] = c
		}
		c.all = append(c.all, in)
		c.bytes += in.Size
		c.newest = gcLater(c.newest, in.ModTime)
		if rest == currentFile {
			cur := in
			c.current = &cur
			continue
		}
		dir, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		digest := gcDirDigest(dir)
		if digest == "" {
			continue
		}
		d := c.dirs[dir]
		if d == nil {
			d = &gcDir{digest: digest}
			c.dirs[dir] = d
		}
		d.objs = append(d.objs, in)
		d.bytes += in.Size
		d.newest = gcLater(d.newest, in.ModTime)
		if file == metaFile {
			d.metaKey, d.metaMod = in.Key, in.ModTime
		}
	}
	return cats
}

// gcDirDigest is the digest a content directory name stands for, or "".
func gcDirDigest(dir string) string {
	alg, hex, ok := strings.Cut(dir, "-")
	if !ok || !ValidDigest(alg+":"+hex) {
		return ""
	}
	return alg + ":" + hex
}

func gcLater(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (r *gcRun) pastGrace(since time.Time) bool { return r.now.Sub(since) >= r.grace }

func (r *gcRun) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.rep.Problems = append(r.rep.Problems, msg)
	r.log.Warn("gc: " + msg)
}

func gcKeys(infos []storage.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
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

// planRemoval deletes a catalog that is no longer configured, once none of
// its objects was written for the unconfigured age: the pointer first, so
// no new reader finds it, then content, meta.json of each digest first.
func (r *gcRun) planRemoval(c *gcCatalog) {
	it := GCItem{Catalog: c.name, Keys: gcKeys(c.all), Bytes: c.bytes, InactiveSince: c.newest}
	if r.now.Sub(c.newest) < r.unconfigured {
		it.Reason = GCRecentlyUsed
		r.keep(it)
		return
	}
	it.Reason = GCRemovedCatalog
	order := slices.Clone(c.all)
	rank := func(k string) int {
		switch {
		case strings.HasSuffix(k, "/"+currentFile):
			return 0
		case strings.HasSuffix(k, "/"+metaFile):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(order, func(a, b storage.Info) int { return rank(a.Key) - rank(b.Key) })
	r.deletes = append(r.deletes, func(ctx context.Context) error {
		if !r.o.DryRun {
			for _, in := range order {
				if err := r.s.Delete(ctx, in.Key); err != nil {
					return fmt.Errorf("catalog: gc: %w", err)
				}
			}
		}
		r.deleted(it)
		return nil
	})
}

// planCatalog plans the incomplete content of a configured catalog and
// returns its non-current complete content, newest first, for the caller
// to apply Keep.
func (r *gcRun) planCatalog(ctx context.Context, c *gcCatalog) ([]*gcCandidate, error) {
	cur, swap, ok, err := r.current(ctx, c)
	if !ok || err != nil {
		return nil, err
	}
	var cands []*gcCandidate
	for _, dir := range gcSortedKeys(c.dirs) {
		cd, err := r.candidate(ctx, c, c.dirs[dir], cur.Digest, swap)
		if err != nil {
			return nil, err
		}
		if cd != nil {
			cands = append(cands, cd)
		}
	}
	slices.SortFunc(cands, func(a, b *gcCandidate) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(a.dir.digest, b.dir.digest)
	})
	return cands, nil
}

// current reads c's pointer now, not from the listing (it may have been
// published or swapped since), and the time of its last swap; ok is false
// when the catalog is to be left alone.
func (r *gcRun) current(ctx context.Context, c *gcCatalog) (cur Pointer, swap time.Time, ok bool, err error) {
	p, etag, err := Current(ctx, r.s, c.name)
	switch {
	case err == nil:
		cur = p
		if swap, err = r.swapTime(ctx, c.name, etag); err != nil {
			return cur, swap, false, err
		}
	case errors.Is(err, storage.ErrNotExist):
		if c.current != nil {
			// Deleted since the listing (another GC removing the
			// catalog): count it as swapped just now.
			swap = r.now
		}
	case errors.Is(err, ErrCorrupt):
		r.problem("%s: unreadable pointer, catalog left alone: %v", c.name, err)
		return cur, swap, false, nil
	default:
		return cur, swap, false, fmt.Errorf("catalog: gc: %w", err)
	}
	if cur.Digest != "" {
		if _, ok := c.dirs[digestDir(cur.Digest)]; !ok {
			// Perhaps written after the listing: look again.
			if m, ok, err := HasContent(ctx, r.s, c.name, cur.Digest); err != nil {
				return cur, swap, false, fmt.Errorf("catalog: gc: %w", err)
			} else if !ok {
				r.problem("%s: current pointer names %s, which has no complete content", c.name, cur.Digest)
			} else {
				r.addSources(c.name, cur.Digest, m.Sources())
				r.roots = append(r.roots, [2]string{c.name, cur.Digest})
			}
		}
	}
	return cur, swap, true, nil
}

// candidate plans d, one digest of c: the current one and what cannot be
// judged are kept, incomplete content goes once out of grace, and complete
// content is returned as a candidate for the age and size rules.
func (r *gcRun) candidate(ctx context.Context, c *gcCatalog, d *gcDir, current string, swap time.Time) (*gcCandidate, error) {
	it := GCItem{Catalog: c.name, Digest: d.digest, Keys: gcKeys(d.objs), Bytes: d.bytes}
	if d.digest == current {
		it.Reason = GCCurrent
		r.keep(it)
		return nil, r.readSources(ctx, c.name, d.digest)
	}
	it.InactiveSince = gcLater(swap, d.newest)
	complete := d.metaKey != ""
	var m Meta
	if complete {
		var err error
		m, err = readMeta(ctx, r.s, c.name, d.digest)
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrNotExist):
			// meta.json went since the listing: someone else is
			// deleting it.
			return nil, nil
		case errors.Is(err, ErrFormat):
			it.Reason = GCUnknownFormat
			r.keep(it)
			return nil, nil
		case errors.Is(err, ErrCorrupt):
			complete = false // as HasContent sees it: to be written again
		default:
			return nil, fmt.Errorf("catalog: gc: %w", err)
		}
	}
	if !complete {
		// Incomplete content is inactive since its last write, pointer
		// or not: no reader can open it.
		it.InactiveSince = d.newest
		if r.pastGrace(d.newest) {
			r.planDelete(c.name, d, it, GCIncomplete)
		} else {
			it.Reason = GCWriting
			r.keep(it)
		}
		return nil, nil
	}
	r.addSources(c.name, d.digest, m.Sources())
	created := m.Created
	if created.IsZero() {
		created = d.metaMod
	}
	return &gcCandidate{name: c.name, dir: d, created: created, since: it.InactiveSince}, nil
}

// swapTime is when the pointer version with etag was written: the last
// swap. A pointer changed again since it was read was swapped just now.
func (r *gcRun) swapTime(ctx context.Context, name, etag string) (time.Time, error) {
	key := catalogPrefix(name) + currentFile
	// A listing, not Stat: S3 lists modification times in milliseconds,
	// HEAD gives whole seconds.
	list, err := r.s.List(ctx, key)
	if err != nil {
		return time.Time{}, fmt.Errorf("catalog: gc: %w", err)
	}
	for _, in := range list {
		if in.Key == key && in.ETag == etag {
			return in.ModTime, nil
		}
	}
	return r.now, nil
}

func (cd *gcCandidate) item() GCItem {
	return GCItem{Catalog: cd.name, Digest: cd.dir.digest, Keys: gcKeys(cd.dir.objs), Bytes: cd.dir.bytes,
		Created: cd.created, InactiveSince: cd.since}
}

func (r *gcRun) planContent(cd *gcCandidate, reason GCReason) {
	r.planDelete(cd.name, cd.dir, cd.item(), reason)
}

// capSize keeps what pool holds unless its bytes exceed MaxInactiveBytes,
// in which case the least recent content out of grace goes first.
func (r *gcRun) capSize(pool []*gcCandidate) {
	var total int64
	for _, cd := range pool {
		total += cd.dir.bytes
	}
	if r.o.MaxInactiveBytes > 0 && total > r.o.MaxInactiveBytes {
		lru := slices.Clone(pool)
		slices.SortStableFunc(lru, func(a, b *gcCandidate) int { return a.created.Compare(b.created) })
		for _, cd := range lru {
			if total <= r.o.MaxInactiveBytes {
				break
			}
			if r.pastGrace(cd.since) {
				cd.evict = true
				total -= cd.dir.bytes
			}
		}
		if total > r.o.MaxInactiveBytes {
			r.problem("inactive content is %d bytes, over the cap of %d: the rest is within the grace period", total, r.o.MaxInactiveBytes)
		}
	}
	r.rep.InactiveBytes = total
	for _, cd := range pool {
		if cd.evict {
			r.planContent(cd, GCOverSize)
			continue
		}
		it := cd.item()
		it.Reason = cd.reason
		r.keep(it)
	}
}

// planDelete deletes one digest's content: meta.json first, then, unless
// the pointer came back to the digest meanwhile, everything else.
func (r *gcRun) planDelete(name string, d *gcDir, it GCItem, reason GCReason) {
	it.Reason = reason
	r.deletes = append(r.deletes, func(ctx context.Context) error {
		if r.protected[name][d.digest] {
			if d.metaKey != "" {
				r.rep.InactiveBytes += it.Bytes
			}
			it.Reason = GCReferenced
			r.keep(it)
			return nil
		}
		if r.o.DryRun {
			r.deleted(it)
			return nil
		}
		if d.metaKey != "" {
			back, err := r.unmeta(ctx, name, d)
			if err != nil {
				return err
			}
			if back {
				it.Reason = GCRepublished
				r.keep(it)
				return nil
			}
		}
		for _, in := range d.objs {
			if in.Key == d.metaKey {
				continue
			}
			if err := r.s.Delete(ctx, in.Key); err != nil {
				return fmt.Errorf("catalog: gc: %w", err)
			}
		}
		r.deleted(it)
		if p, _, err := Current(ctx, r.s, name); err == nil && p.Digest == d.digest {
			r.problem("%s: published %s while gc deleted it; its next sync writes it again", name, d.digest)
		}
		return nil
	})
}

// unmeta deletes a digest's meta.json and reports whether the pointer
// names the digest right after, in which case meta.json is put back.
func (r *gcRun) unmeta(ctx context.Context, name string, d *gcDir) (back bool, err error) {
	saved, err := readSmall(ctx, r.s, d.metaKey)
	if errors.Is(err, storage.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("catalog: gc: %w", err)
	}
	if err := r.s.Delete(ctx, d.metaKey); err != nil {
		return false, fmt.Errorf("catalog: gc: %w", err)
	}
	p, _, err := Current(ctx, r.s, name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return false, nil
	case err == nil && p.Digest != d.digest:
		return false, nil
	}
	// Current again, or the pointer cannot be read: the content is whole
	// but for meta.json, so put it back.
	if _, perr := r.s.Put(ctx, d.metaKey, bytes.NewReader(saved)); perr != nil {
		return true, fmt.Errorf("catalog: gc: restoring %s: %w", d.metaKey, perr)
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return true, fmt.Errorf("catalog: gc: %w", err)
	}
	return true, nil
}

// leftovers removes (or, dry, lists) interrupted writes of stores that
// keep them.
func (r *gcRun) leftovers(ctx context.Context, hints []string) error {
	lc, ok := r.s.(LeftoverCleaner)
	if !ok {
		return nil
	}
	age := r.o.LeftoverAge
	switch {
	case age == 0:
		age = DefaultLeftoverAge
	case age < 0:
		age = 0
	}
	var infos []storage.Info
	var err error
	if r.o.DryRun {
		infos, err = lc.Leftovers(ctx, keyRoot, age, hints)
	} else {
		infos, err = lc.RemoveLeftovers(ctx, keyRoot, age, hints)
	}
	for _, in := range infos {
		it := GCItem{Reason: GCLeftover, Keys: []string{in.Key}, Bytes: in.Size, InactiveSince: in.ModTime}
		if name, _, ok := strings.Cut(strings.TrimPrefix(in.Key, keyRoot), "/"); ok && strings.HasPrefix(in.Key, keyRoot) {
			it.Catalog = name
		}
		r.deleted(it)
	}
	if err != nil {
		return fmt.Errorf("catalog: gc: %w", err)
	}
	return nil
}

// readSources records the sources of the current content, whose meta.json
// the candidates loop does not read otherwise.
func (r *gcRun) readSources(ctx context.Context, name, digest string) error {
	m, err := readMeta(ctx, r.s, name, digest)
	switch {
	case err == nil:
		r.addSources(name, digest, m.Sources())
	case errors.Is(err, storage.ErrNotExist), errors.Is(err, ErrCorrupt), errors.Is(err, ErrFormat):
	default:
		return fmt.Errorf("catalog: gc: %w", err)
	}
	return nil
}

func (r *gcRun) addSources(name, digest string, sources []string) {
	if len(sources) == 0 {
		return
	}
	if r.sources[name] == nil {
		r.sources[name] = map[string][]string{}
	}
	r.sources[name][digest] = sources
}

// protect marks, once everything is planned, what the content kept
// (current or not) reads, following sources transitively: content whose
// lines other content shares is kept as long as that content is, complete
// or not, whatever the age and size rules said.
func (r *gcRun) protect() {
	r.protected = map[string]map[string]bool{}
	queue := slices.Clone(r.roots)
	for _, it := range r.rep.Kept {
		if it.Digest != "" {
			queue = append(queue, [2]string{it.Catalog, it.Digest})
		}
	}
	for len(queue) > 0 {
		name, digest := queue[0][0], queue[0][1]
		queue = queue[1:]
		for _, src := range r.sources[name][digest] {
			if r.protected[name] == nil {
				r.protected[name] = map[string]bool{}
			}
			if !r.protected[name][src] {
				r.protected[name][src] = true
				queue = append(queue, [2]string{name, src})
			}
		}
	}
}
