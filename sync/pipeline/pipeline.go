// Package pipeline runs one sync: it turns a catalog image into a
// published catalog. Resolve the tag (one HEAD), skip what is already
// published or stored, otherwise stream the layers, unpack, parse and
// validate the FBC, write the catalog and its index, and swap the pointer.
// Every decision reads the actual state (the registry's digest, the
// stored pointer), never a status written earlier.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// Action says what a successful sync did.
type Action string

const (
	// ActionUpToDate means the tag still resolves to the published digest.
	ActionUpToDate Action = "UpToDate"
	// ActionReused means the digest's content was already stored; only the
	// pointer moved.
	ActionReused Action = "Reused"
	// ActionPublished means the image was pulled, validated and published.
	ActionPublished Action = "Published"
)

// Result describes a successful sync.
type Result struct {
	Catalog     string
	Image       string
	Digest      string
	ResolvedRef string
	// Mirror is the registries.conf mirror the image came from, if any.
	Mirror string
	// VerifiedBy says what verified the image's signature, if required.
	VerifiedBy string
	Action     Action
	// Meta is the published content's description.
	Meta catalog.Meta
	// BytesPulled counts compressed layer bytes read from the registry.
	BytesPulled int64
	// Files counts the catalog's files when it was pulled; FilesReused
	// those whose objects were copied from the published content instead
	// of parsed.
	Files, FilesReused int
	Duration           time.Duration
	// Phases holds how long each phase took.
	Phases map[Phase]time.Duration
}

// ImageReader is what a sync reads images through; *source.Client is one.
type ImageReader interface {
	// Resolve pins an image reference to a digest.
	Resolve(ctx context.Context, image string) (source.Resolved, error)
	// Open fetches the manifest and config: the layers to stream.
	Open(ctx context.Context, res source.Resolved) (*source.Image, error)
	// OpenLayer streams layer i of img, decompressed; progress gets the
	// compressed bytes read so far.
	OpenLayer(ctx context.Context, img *source.Image, i int, progress func(done int64)) (*source.LayerReader, error)
}

// Pipeline runs syncs. It is safe for concurrent use, but two syncs of the
// same catalog must not overlap (the engine serialises them).
type Pipeline struct {
	src     ImageReader
	store   storage.Store
	limits  unpack.Limits
	workers int
	budget  int64
	inline  int64
	tmpDir  string
	log     *slog.Logger
	now     func() time.Time

	holder    catalog.LeaseHolder
	leaseTTL  time.Duration
	onPublish func(name string)
	sigs      SignatureChecker
	verify    bool
	static    bool
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// WithLimits sets the caps applied to images.
func WithLimits(l unpack.Limits) Option { return func(p *Pipeline) { p.limits = l } }

// WithWorkers sets how many files are parsed at once (default GOMAXPROCS).
func WithWorkers(n int) Option {
	return func(p *Pipeline) {
		if n > 0 {
			p.workers = n
		}
	}
}

// WithFileBudget caps the bytes of files read ahead of their parsing
// (default 1 MiB); files larger than inline (default 256 KiB) wait on
// local disk (WithTempDir) instead.
func WithFileBudget(budget, inline int64) Option {
	return func(p *Pipeline) {
		if budget > 0 {
			p.budget = budget
		}
		if inline > 0 {
			p.inline = min(inline, p.budget)
		}
	}
}

// WithTempDir sets where the spool file lives (default os.TempDir()).
func WithTempDir(dir string) Option { return func(p *Pipeline) { p.tmpDir = dir } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(p *Pipeline) { p.log = l } }

// WithReplica names this replica in the store's sync leases (default: the
// host name). The name is for people (logs, status); a lease belongs to
// one process whatever its name (catalog.LeaseHolder).
func WithReplica(id string) Option {
	return func(p *Pipeline) {
		if id != "" {
			p.holder.Replica = id
		}
	}
}

// WithLeaseTTL sets how long a sync lease lasts unrenewed (default
// catalog.DefaultLeaseTTL): how long a replica that died mid-sync delays
// the others.
func WithLeaseTTL(d time.Duration) Option { return func(p *Pipeline) { p.leaseTTL = d } }

// WithOnPublish calls f right after a sync moved (or found) the catalog's
// pointer, before its Published event goes to observers: a server drops
// its cached copy there, so nobody told "published" reads the old one.
func WithOnPublish(f func(name string)) Option { return func(p *Pipeline) { p.onPublish = f } }

// WithVerifyReuse makes every sync that reuses files of the published
// content parse them too and compare, byte for byte and fact for fact: a
// difference fails the sync. It costs the speed-up; the test suite runs
// with it, to prove reuse changes nothing.
func WithVerifyReuse(on bool) Option { return func(p *Pipeline) { p.verify = on } }

// WithStaticLayout makes every sync leave the static read layout in the
// store (catalog.PublishStatic): content is written whole, its gzip
// beside it before the pointer moves, and api/v1/all follows the pointer.
// A sync whose catalog is up to date repairs a layout a failure left
// behind.
func WithStaticLayout(on bool) Option { return func(p *Pipeline) { p.static = on } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(p *Pipeline) { p.now = now } }

// New returns a Pipeline reading images from src into store.
func New(src ImageReader, store storage.Store, opts ...Option) *Pipeline {
	p := &Pipeline{
		src:     src,
		store:   store,
		limits:  unpack.DefaultLimits,
		workers: runtime.GOMAXPROCS(0),
		// Files are read whole and parsed on worker goroutines while the
		// next ones stream in; the budget caps the bytes held by files
		// waiting or in parse. A file larger than inline waits on local
		// disk and is parsed from there: memory holds its largest object,
		// not the file. Larger files held whole were most of a sync's
		// heap; at 4 MiB and 1 MiB the buffers were a fifth of it, and
		// the 222 MB catalog's sync used as much CPU with a quarter.
		budget: 1 << 20,
		inline: 256 << 10,
		log:    slog.New(slog.DiscardHandler),
		now:    time.Now,
		holder: catalog.ThisProcess(defaultReplica()),
	}
	for _, fn := range opts {
		fn(p)
	}
	return p
}

// Run syncs one catalog and reports progress to obs. What was published
// before stays published unless Run publishes a complete new catalog.
func (p *Pipeline) Run(ctx context.Context, c catalogspec.Catalog, obs ...Observer) (res Result, err error) {
	if catalog.ValidName(c.Name) {
		// The sync lease, unless the caller (the engine) holds it already.
		lctx, release, err := p.HoldLease(ctx, c.Name, obs)
		if err != nil {
			se, ok := AsError(err)
			if !ok {
				se = &Error{Phase: PhaseResolving, Reason: ReasonInternal, Retryable: true, Err: err}
				err = se
			}
			res = Result{Catalog: c.Name, Image: c.Image.String(), Phases: map[Phase]time.Duration{}}
			newReporter(c.Name, p.now, obs).emit(Event{Phase: PhaseFailed, Err: se})
			return res, err
		}
		defer release()
		ctx = lctx
	}
	return p.run(ctx, c, obs...)
}

// attempt is one sync in progress: what its steps share.
type attempt struct {
	p   *Pipeline
	c   catalogspec.Catalog
	rep *reporter
	res Result
	// prev is the content the catalog's pointer was at, if complete: the
	// files a pull may reuse.
	prev *catalog.Meta
}

func (a *attempt) phase(ph Phase, since time.Time) { a.res.Phases[ph] += a.p.now().Sub(since) }

func (p *Pipeline) run(ctx context.Context, c catalogspec.Catalog, obs ...Observer) (Result, error) {
	a := &attempt{p: p, c: c, rep: newReporter(c.Name, p.now, obs)}
	defer a.rep.close()
	start := p.now()
	a.res = Result{Catalog: c.Name, Image: c.Image.String(), Phases: map[Phase]time.Duration{}}
	err := a.sync(ctx)
	a.res.Duration = p.now().Sub(start)
	if err != nil {
		return a.res, a.failed(ctx, err)
	}
	r := a.res
	a.rep.emit(Event{Phase: PhasePublished, Result: &r, Objects: r.Meta.Objects})
	p.log.Info("sync done", "catalog", c.Name, "action", r.Action, "digest", r.Digest,
		"duration", r.Duration.Round(time.Millisecond), "bytesPulled", r.BytesPulled)
	return a.res, nil
}

// failed reports err, made an *Error, and returns it. A sync whose
// context ended was canceled, unless the end was its lease's loss.
func (a *attempt) failed(ctx context.Context, err error) error {
	se, ok := AsError(err)
	if !ok {
		se = &Error{Phase: PhaseFailed, Reason: ReasonInternal, Retryable: true, Err: err}
	}
	if ctx.Err() != nil && se.Reason != ReasonCanceled && !errors.Is(context.Cause(ctx), catalog.ErrLeaseLost) {
		se.Reason, se.Retryable = ReasonCanceled, true
	}
	a.rep.emit(Event{Phase: PhaseFailed, Err: se})
	a.p.log.Warn("sync failed", "catalog", a.c.Name, "image", a.c.Image.String(), "err", se)
	return se
}

// sync resolves the tag and publishes what it names: nothing when it is
// published already, the stored content when there is some, else what it
// pulls. Every decision reads what storage actually holds.
func (a *attempt) sync(ctx context.Context) error {
	if !catalog.ValidName(a.c.Name) {
		return &Error{Phase: PhaseResolving, Reason: ReasonInvalidRef, Err: fmt.Errorf("%w: %q", catalog.ErrInvalidName, a.c.Name)}
	}
	resolved, err := a.resolve(ctx)
	if err != nil {
		return err
	}
	poll := catalog.Poll{Time: a.p.now(), Ref: a.c.Image.String(), Digest: resolved.Digest}
	if done, err := a.upToDate(ctx, resolved); err != nil || done {
		if done {
			if err := a.p.publishStatic(ctx, a.c.Name); err != nil {
				return err
			}
			a.p.recordPoll(ctx, a.c.Name, poll)
		}
		return err
	}
	if a.res.VerifiedBy == "" { // else upToDate has just verified it
		if err := a.p.checkSignature(ctx, a.c, resolved, &a.res); err != nil {
			return err
		}
	}
	ptr := catalog.Pointer{Digest: resolved.Digest, Ref: a.c.Image.String(), ResolvedRef: resolved.Ref, Mirror: resolved.Mirror,
		VerifiedBy: a.res.VerifiedBy, ResolvedAt: poll.Time}
	meta, stored, err := catalog.HasContent(ctx, a.p.store, a.c.Name, resolved.Digest)
	if err != nil {
		return storageError(PhaseResolving, err)
	}
	action, objects := ActionReused, 0
	if !stored {
		if meta, err = a.pull(ctx, resolved); err != nil {
			return err
		}
		action, objects, ptr.PublishedAt = ActionPublished, meta.Objects, a.p.now()
	}
	if err := a.publish(ctx, ptr, objects); err != nil {
		return err
	}
	a.res.Action, a.res.Meta = action, meta
	a.p.recordPoll(ctx, a.c.Name, poll)
	return nil
}

func (a *attempt) resolve(ctx context.Context) (source.Resolved, error) {
	t := a.p.now()
	a.rep.emit(Event{Phase: PhaseResolving})
	resolved, err := a.p.src.Resolve(ctx, a.c.Image.String())
	if err != nil {
		return resolved, registryError(PhaseResolving, err)
	}
	a.rep.digest = resolved.Digest
	a.res.Digest, a.res.ResolvedRef, a.res.Mirror = resolved.Digest, resolved.Ref, resolved.Mirror
	a.phase(PhaseResolving, t)
	return resolved, nil
}

// upToDate reports whether the catalog's pointer is at the resolved digest
// (for the same image reference) with its content complete.
func (a *attempt) upToDate(ctx context.Context, resolved source.Resolved) (bool, error) {
	cur, _, err := catalog.Current(ctx, a.p.store, a.c.Name)
	if errors.Is(err, storage.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, storageError(PhaseResolving, err)
	}
	meta, ok, err := catalog.HasContent(ctx, a.p.store, a.c.Name, cur.Digest)
	if err != nil || !ok {
		return false, nil
	}
	if cur.Digest != resolved.Digest || cur.Ref != a.c.Image.String() {
		a.prev = &meta
		return false, nil
	}
	if cur.VerifiedBy == "" {
		// Published before a requirement applied to it (or before it was
		// checked for this kind of image): a requirement that applies now
		// is checked, and once it holds the pointer is published again to
		// record it, so later polls skip the check.
		if err := a.p.checkSignature(ctx, a.c, resolved, &a.res); err != nil {
			return false, err
		}
		if a.res.VerifiedBy != "" {
			return false, nil
		}
	}
	a.res.Action, a.res.Meta = ActionUpToDate, meta
	return true, nil
}

func (a *attempt) publish(ctx context.Context, ptr catalog.Pointer, objects int) error {
	t := a.p.now()
	a.rep.emit(Event{Phase: PhasePublishing, Objects: objects})
	if err := a.p.publish(ctx, a.c.Name, ptr); err != nil {
		return err
	}
	a.phase(PhasePublishing, t)
	return nil
}

// defaultReplica names this replica when WithReplica is not given: the
// host name. The command passes the pod's name with WithReplica.
func defaultReplica() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "catalogsync"
}

func (p *Pipeline) publish(ctx context.Context, name string, ptr catalog.Pointer) error {
	if ptr.PublishedAt.IsZero() {
		ptr.PublishedAt = p.now()
	}
	if p.static {
		// Before the pointer moves, so api/v1/all.gz is ready with it.
		if err := catalog.WriteStatic(ctx, p.store, name, ptr.Digest); err != nil {
			return storageError(PhasePublishing, err)
		}
	}
	if err := catalog.Publish(ctx, p.store, name, ptr); err != nil {
		if !errors.Is(err, catalog.ErrStale) {
			return storageError(PhasePublishing, err)
		}
		// Another replica published a newer resolution meanwhile;
		// moving the pointer back would be wrong, and nothing failed.
		p.log.Info("newer resolution already published", "catalog", name, "digest", ptr.Digest)
	}
	if p.onPublish != nil {
		p.onPublish(name)
	}
	return p.publishStatic(ctx, name)
}

// publishStatic moves the static layout to the published pointer. The
// pointer has moved already, so a failure fails the sync (its status
// says so, the next sync repairs it) but unpublishes nothing.
func (p *Pipeline) publishStatic(ctx context.Context, name string) error {
	if !p.static {
		return nil
	}
	if _, err := catalog.PublishStatic(ctx, p.store, name); err != nil {
		return storageError(PhasePublishing, fmt.Errorf("static layout: %w", err))
	}
	return nil
}

// recordPoll notes the poll for due-ness; failing to record it must not
// fail a sync that did its job.
func (p *Pipeline) recordPoll(ctx context.Context, name string, poll catalog.Poll) {
	if err := catalog.RecordPoll(ctx, p.store, name, poll); err != nil {
		p.log.Warn("record poll", "catalog", name, "err", err)
	}
}

func registryError(ph Phase, err error) error {
	reason := ReasonRegistry
	switch {
	case errors.Is(err, source.ErrInvalidRef), errors.Is(err, source.ErrLocalRefused), errors.Is(err, source.ErrLocalMissing), errors.Is(err, source.ErrBlocked):
		reason = ReasonInvalidRef
	case errors.Is(err, source.ErrNotImage):
		reason = ReasonNotCatalogImage
	case errors.Is(err, source.ErrAuth):
		reason = ReasonAuth
	}
	return &Error{Phase: ph, Reason: reason, Retryable: source.Retryable(err), RetryAfter: source.RetryAfter(err), Err: err}
}

func storageError(ph Phase, err error) error {
	// A store refusing writes is an operator's to fix: not retried.
	return &Error{Phase: ph, Reason: ReasonStorage, Retryable: !errors.Is(err, storage.ErrDenied), Err: err}
}

// layerError classifies what went wrong while streaming layers: unsafe or
// oversized content, or a compression that is not a layer's, is terminal;
// anything else is worth a retry, a digest mismatch at a layer's end too
// (source.Retryable): a truncated or mangled transfer is the likelier
// cause, and a registry serving wrong bytes keeps failing the retries.
func layerError(err error) error {
	switch {
	case errors.Is(err, unpack.ErrUnsafe), errors.Is(err, unpack.ErrNoConfigs):
		return &Error{Phase: PhaseUnpacking, Reason: ReasonUnsafeImage, Err: err}
	case errors.Is(err, unpack.ErrLimit):
		return &Error{Phase: PhaseUnpacking, Reason: ReasonTooLarge, Err: err}
	case errors.Is(err, source.ErrCompression):
		return &Error{Phase: PhasePulling, Reason: ReasonNotCatalogImage, Err: err}
	}
	return registryError(PhasePulling, err)
}
