// Package pipeline runs one sync: it turns a catalog image into a
// published catalog. Resolve the tag (one HEAD), skip what is already
// published or stored, otherwise stream the layers, unpack, parse and
// validate the FBC, write the catalog and its index, and swap the pointer.
// Every decision reads the actual state (the registry's digest, the
// stored pointer), never a status written earlier.
package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// Catalog is what to sync: a name and the image it comes from.
type Catalog struct {
	Name  string
	Image string
	// PollInterval is how often a tag is re-resolved (0: never polled).
	PollInterval time.Duration
}

// Action says what a successful sync did.
type Action string

const (
	// ActionUpToDate: the tag still resolves to the published digest.
	ActionUpToDate Action = "UpToDate"
	// ActionReused: the digest's content was already stored; only the
	// pointer moved.
	ActionReused Action = "Reused"
	// ActionPublished: the image was pulled, validated and published.
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
	Duration    time.Duration
	// Phases holds how long each phase took.
	Phases map[Phase]time.Duration
}

// ImageReader is what a sync reads images through; *source.Source is one.
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
// (default 8 MiB); files larger than inline (default 4 MiB) are parsed as
// they stream instead.
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
		// waiting or in parse. A file larger than inline is parsed as it
		// streams, on the reading goroutine.
		budget: 8 << 20,
		inline: 4 << 20,
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
func (p *Pipeline) Run(ctx context.Context, c Catalog, obs ...Observer) (res Result, err error) {
	if catalog.ValidName(c.Name) {
		// The sync lease, unless the caller (the engine) holds it already.
		lctx, release, err := p.HoldLease(ctx, c.Name, obs)
		if err != nil {
			se, ok := AsError(err)
			if !ok {
				se = &Error{Phase: PhaseResolving, Reason: ReasonInternal, Retryable: true, Err: err}
				err = se
			}
			res = Result{Catalog: c.Name, Image: c.Image, Phases: map[Phase]time.Duration{}}
			newReporter(c.Name, p.now, obs).emit(Event{Phase: PhaseFailed, Err: se})
			return res, err
		}
		defer release()
		ctx = lctx
	}
	return p.run(ctx, c, obs...)
}

func (p *Pipeline) run(ctx context.Context, c Catalog, obs ...Observer) (res Result, err error) {
	rep := newReporter(c.Name, p.now, obs)
	defer rep.close()
	start := p.now()
	res = Result{Catalog: c.Name, Image: c.Image, Phases: map[Phase]time.Duration{}}
	defer func() {
		res.Duration = p.now().Sub(start)
		if err != nil {
			se, ok := AsError(err)
			if !ok {
				se = &Error{Phase: PhaseFailed, Reason: ReasonInternal, Retryable: true, Err: err}
				err = se
			}
			if ctx.Err() != nil && se.Reason != ReasonCanceled {
				se.Reason, se.Retryable = ReasonCanceled, true
			}
			rep.emit(Event{Phase: PhaseFailed, Err: se})
			p.log.Warn("sync failed", "catalog", c.Name, "image", c.Image, "err", err)
			return
		}
		r := res
		rep.emit(Event{Phase: PhasePublished, Result: &r, Objects: res.Meta.Objects})
		p.log.Info("sync done", "catalog", c.Name, "action", res.Action, "digest", res.Digest,
			"duration", res.Duration.Round(time.Millisecond), "bytesPulled", res.BytesPulled)
	}()
	if !catalog.ValidName(c.Name) {
		return res, &Error{Phase: PhaseResolving, Reason: ReasonInvalidRef, Err: fmt.Errorf("%w: %q", catalog.ErrInvalidName, c.Name)}
	}

	phase := func(ph Phase, since time.Time) { res.Phases[ph] += p.now().Sub(since) }

	t := p.now()
	rep.emit(Event{Phase: PhaseResolving})
	resolved, err := p.src.Resolve(ctx, c.Image)
	if err != nil {
		return res, registryError(PhaseResolving, err)
	}
	rep.digest = resolved.Digest
	res.Digest, res.ResolvedRef, res.Mirror = resolved.Digest, resolved.Ref, resolved.Mirror
	phase(PhaseResolving, t)

	// Level-based: compare with what storage actually holds.
	cur, _, err := catalog.Current(ctx, p.store, c.Name)
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		return res, storageError(PhaseResolving, err)
	}
	poll := catalog.Poll{Time: p.now(), Ref: c.Image, Digest: resolved.Digest}
	if err == nil && cur.Digest == resolved.Digest && cur.Ref == c.Image {
		if meta, ok, err := catalog.HasContent(ctx, p.store, c.Name, resolved.Digest); err == nil && ok {
			res.Action, res.Meta = ActionUpToDate, meta
			p.recordPoll(ctx, c.Name, poll)
			return res, nil
		}
	}
	if err := p.checkSignature(ctx, c, resolved, &res); err != nil {
		return res, err
	}
	pointer := catalog.Pointer{Digest: resolved.Digest, Ref: c.Image, ResolvedRef: resolved.Ref, ResolvedAt: poll.Time}
	// reuse publishes content already stored under the digest.
	reuse := func(meta catalog.Meta) (Result, error) {
		t := p.now()
		rep.emit(Event{Phase: PhasePublishing})
		if err := p.publish(ctx, c.Name, pointer); err != nil {
			return res, err
		}
		phase(PhasePublishing, t)
		res.Action, res.Meta = ActionReused, meta
		p.recordPoll(ctx, c.Name, poll)
		return res, nil
	}
	if meta, ok, err := catalog.HasContent(ctx, p.store, c.Name, resolved.Digest); err != nil {
		return res, storageError(PhaseResolving, err)
	} else if ok {
		return reuse(meta)
	}

	// Replicas sharing the store all hear the same webhook: the one
	// holding the sync lease (taken in Run) pulls; the others wait for it
	// and then find the digest published.
	meta, pulled, err := p.pull(ctx, c, resolved, rep, phase)
	res.BytesPulled = pulled
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, catalog.ErrLeaseLost) {
			return res, storageError(PhasePulling, cause)
		}
		return res, err
	}
	t = p.now()
	rep.emit(Event{Phase: PhasePublishing, Objects: meta.Objects})
	pointer.PublishedAt = p.now()
	if err := p.publish(ctx, c.Name, pointer); err != nil {
		return res, err
	}
	phase(PhasePublishing, t)
	res.Action, res.Meta = ActionPublished, meta
	p.recordPoll(ctx, c.Name, poll)
	return res, nil
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
	return nil
}

// recordPoll notes the poll for due-ness; failing to record it must not
// fail a sync that did its job.
func (p *Pipeline) recordPoll(ctx context.Context, name string, poll catalog.Poll) {
	if err := catalog.RecordPoll(ctx, p.store, name, poll); err != nil {
		p.log.Warn("record poll", "catalog", name, "err", err)
	}
}

// objRec locates one parsed object in the spool.
type objRec struct {
	obj fbc.Object // Blob cleared: only what validation and the index need
	off int64
	n   int
}

// fileResult is what parsing one file produced. A parse error is kept, not
// returned, because .indexignore may still exclude the file.
type fileResult struct {
	objs []objRec
	err  error
	seq  int // which handle call parsed it
}

// spool holds parsed objects on local disk until the final file order is
// known, so memory does not grow with the catalog.
type spool struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	size    int64
	flushed int64
}

func (s *spool) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = s.size
	return s.w.Flush()
}

// readAt reads what append wrote, flushing the buffer first if needed.
func (s *spool) readAt(b []byte, off int64) error {
	s.mu.Lock()
	if off+int64(len(b)) > s.flushed {
		if err := s.w.Flush(); err != nil {
			s.mu.Unlock()
			return err
		}
		s.flushed = s.size
	}
	s.mu.Unlock()
	_, err := s.f.ReadAt(b, off)
	return err
}

func (s *spool) append(b []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.size
	n, err := s.w.Write(b)
	s.size += int64(n)
	return off, err
}

func (p *Pipeline) pull(ctx context.Context, c Catalog, resolved source.Resolved, rep *reporter, phase func(Phase, time.Time)) (catalog.Meta, int64, error) {
	var pulled int64
	t := p.now()
	img, err := p.src.Open(ctx, resolved)
	if err != nil {
		if errors.Is(err, source.ErrMissingLabel) {
			// A tag may be re-pushed with the label; a digest never changes.
			return catalog.Meta{}, 0, &Error{Phase: PhasePulling, Reason: ReasonMissingLabel, Retryable: !resolved.Pinned, Err: err}
		}
		return catalog.Meta{}, 0, registryError(PhasePulling, err)
	}
	u, err := unpack.New(img.ConfigsDir, p.limits)
	if err != nil {
		return catalog.Meta{}, 0, &Error{Phase: PhasePulling, Reason: ReasonUnsafeImage, Err: err}
	}
	f, err := os.CreateTemp(p.tmpDir, "catalogsync-spool-*")
	if err != nil {
		return catalog.Meta{}, 0, &Error{Phase: PhasePulling, Reason: ReasonInternal, Retryable: true, Err: err}
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	sp := &spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}

	var (
		mu      sync.Mutex
		results = map[string]*fileResult{}
		wg      sync.WaitGroup
		sem     = semaphore.NewWeighted(p.budget)
		workers = semaphore.NewWeighted(int64(p.workers))
		fileErr error // a spool write failure: fatal, unlike parse errors
	)
	var seq int // handle calls so far; a path given twice keeps the later
	parse := func(path string, r io.Reader, n int) {
		fr := &fileResult{seq: n}
		fr.err = fbc.Parse(r, func(o fbc.Object) error {
			off, err := sp.append(o.Blob)
			if err != nil {
				mu.Lock()
				fileErr = err
				mu.Unlock()
				return err
			}
			rec := objRec{obj: o, off: off, n: len(o.Blob)}
			rec.obj.Blob = nil
			fr.objs = append(fr.objs, rec)
			return nil
		})
		mu.Lock()
		// Parses run concurrently: the later entry wins, not the later
		// parse.
		if old, ok := results[path]; !ok || old.seq < fr.seq {
			results[path] = fr
		}
		mu.Unlock()
	}
	handle := func(path string, size int64, r io.Reader) error {
		seq++
		n := seq
		if size > p.inline {
			parse(path, r, n)
			// Drain what a failed parse left, so the tar stream goes on.
			_, err := io.Copy(io.Discard, r)
			return err
		}
		w := max(size, 1)
		if err := sem.Acquire(ctx, w); err != nil {
			return err
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			sem.Release(w)
			return fmt.Errorf("read %s: %w", path, err)
		}
		if err := workers.Acquire(ctx, 1); err != nil {
			sem.Release(w)
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sem.Release(w)
			defer workers.Release(1)
			parse(path, bytes.NewReader(buf), n)
		}()
		return nil
	}

	for i := len(img.Layers) - 1; i >= 0; i-- {
		l := img.Layers[i]
		ev := Event{Phase: PhasePulling, Layer: len(img.Layers) - i, Layers: len(img.Layers), LayerDigest: l.Digest, BytesTotal: l.Size}
		rep.emit(ev)
		lr, err := p.src.OpenLayer(ctx, img, i, func(done int64) {
			e := ev
			e.BytesDone = done
			rep.emit(e)
		})
		if err != nil {
			wg.Wait()
			// Classified as at the layer's end: data that is not what
			// the manifest says is terminal, transfer trouble retryable.
			return catalog.Meta{}, pulled, layerError(err)
		}
		err = u.Layer(lr, handle)
		if err == nil {
			err = lr.Finish()
		}
		lr.Close()
		pulled += l.Size
		if err != nil {
			wg.Wait()
			return catalog.Meta{}, pulled, layerError(err)
		}
	}
	wg.Wait()
	if fileErr != nil {
		return catalog.Meta{}, pulled, &Error{Phase: PhaseUnpacking, Reason: ReasonInternal, Retryable: true, Err: fmt.Errorf("spool: %w", fileErr)}
	}
	if err := sp.flush(); err != nil {
		return catalog.Meta{}, pulled, &Error{Phase: PhaseUnpacking, Reason: ReasonInternal, Retryable: true, Err: fmt.Errorf("spool: %w", err)}
	}
	phase(PhasePulling, t)

	t = p.now()
	rep.emit(Event{Phase: PhaseUnpacking})
	files, err := u.Files()
	if err != nil {
		return catalog.Meta{}, pulled, layerError(err)
	}
	phase(PhaseUnpacking, t)

	// Validate in catalog order, before anything is written to storage.
	t = p.now()
	v := fbc.NewValidator()
	var objects int
	for _, file := range files {
		fr := results[file.Content]
		if fr == nil {
			return catalog.Meta{}, pulled, &Error{Phase: PhaseValidating, Reason: ReasonInternal, Err: fmt.Errorf("file %s was not parsed", file.Content)}
		}
		if fr.err != nil {
			return catalog.Meta{}, pulled, &Error{Phase: PhaseValidating, Reason: ReasonInvalidCatalog,
				Err: fmt.Errorf("%s: %w", file.Path, fr.err)}
		}
		for _, o := range fr.objs {
			v.Add(file.Path, o.obj)
		}
		objects += len(fr.objs)
	}
	vst := v.Stats()
	rep.emit(Event{Phase: PhaseValidating, Bundles: vst.Bundles, Packages: vst.Packages, Objects: objects})
	if err := v.Validate(); err != nil {
		return catalog.Meta{}, pulled, &Error{Phase: PhaseValidating, Reason: ReasonInvalidCatalog, Err: err}
	}
	phase(PhaseValidating, t)

	t = p.now()
	rep.emit(Event{Phase: PhaseIndexing, Bundles: vst.Bundles, Packages: vst.Packages, Objects: objects})
	w, err := p.writeFromSpool(ctx, c.Name, resolved.Digest, files, results, sp)
	if err != nil {
		return catalog.Meta{}, pulled, err
	}
	meta, err := w.Commit(ctx, catalog.Meta{
		Ref: c.Image,
		Stats: map[string]any{
			"resolvedRef":    resolved.Ref,
			"manifestDigest": img.ManifestDigest,
			"layers":         len(img.Layers),
			"bytesPulled":    pulled,
			"packages":       vst.Packages,
			"channels":       vst.Channels,
			"bundles":        vst.Bundles,
		},
	})
	if err != nil {
		return catalog.Meta{}, pulled, storageError(PhaseIndexing, err)
	}
	phase(PhaseIndexing, t)
	return meta, pulled, nil
}

// writeFromSpool writes catalog.jsonl in the final file order from the
// spool, when it could not be streamed during the pull.
func (p *Pipeline) writeFromSpool(ctx context.Context, name, digest string, files []unpack.File, results map[string]*fileResult, sp *spool) (*catalog.Writer, error) {
	w, err := catalog.NewWriter(ctx, p.store, name, digest)
	if err != nil {
		return nil, storageError(PhaseIndexing, err)
	}
	buf := make([]byte, 0, 64<<10)
	for _, file := range files {
		for _, o := range results[file.Content].objs {
			if cap(buf) < o.n {
				buf = make([]byte, o.n)
			}
			b := buf[:o.n]
			if err := sp.readAt(b, o.off); err != nil {
				w.Abort()
				return nil, &Error{Phase: PhaseIndexing, Reason: ReasonInternal, Retryable: true, Err: fmt.Errorf("spool: %w", err)}
			}
			if err := w.Add(o.obj.Schema, o.obj.Package, o.obj.Name, b); err != nil {
				w.Abort()
				return nil, storageError(PhaseIndexing, err)
			}
		}
	}
	return w, nil
}

func registryError(ph Phase, err error) error {
	reason := ReasonRegistry
	switch {
	case errors.Is(err, source.ErrInvalidRef), errors.Is(err, source.ErrLocalRefused), errors.Is(err, source.ErrLocalMissing), errors.Is(err, source.ErrBlocked):
		reason = ReasonInvalidRef
	case errors.Is(err, source.ErrNotImage):
		reason = ReasonNotCatalogImage
	}
	return &Error{Phase: ph, Reason: reason, Retryable: source.Retryable(err), RetryAfter: source.RetryAfter(err), Err: err}
}

func storageError(ph Phase, err error) error {
	return &Error{Phase: ph, Reason: ReasonStorage, Retryable: true, Err: err}
}

// layerError classifies what went wrong while streaming layers: unsafe or
// oversized content is terminal; anything else (a connection reset, a
// digest mismatch) is worth a retry.
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
