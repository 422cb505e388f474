package status

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

var (
	// ErrRunning is returned by a second call of Writer.Run.
	ErrRunning = errors.New("status writer already running")
	// ErrBaseURL is returned by NewWriter for a base URL that the CRD
	// would refuse in status.urls.base.
	ErrBaseURL = errors.New("base URL must be an absolute http or https URL")
)

// Writer reports syncs in ClusterCatalog status. It implements
// sync.Observer (and sync.WaitObserver, sync.Flusher): give it to every
// sync (the engine's observers). Events update each catalog's desired
// status in memory and queue the catalog on a client-go rate-limited
// workqueue; a fixed number of workers apply it with server-side apply on
// the status subresource, only when something changed, and at most about
// once per MinInterval per catalog while a phase reports bytes. A failed
// apply is retried with the queue's per-item backoff; it never holds up a
// sync.
//
// Two field managers share the status. The Progressing condition is this
// replica's (manager "<manager>/<replica>") and is written only for syncs
// this process runs, which hold the catalog's sync lease: one writer at a
// time. Serving, resolvedSource, urls and lastUnpacked follow from the
// published pointer in storage, are the same whoever computes them
// (manager "<manager>"), and any replica writes them. Every apply carries
// the resourceVersion it was computed from, so a stale view is refused
// (and recomputed) instead of moving the status back.
type Writer struct {
	res      applier
	view     catalogView
	baseURL  string
	manager  string
	replica  string
	interval time.Duration
	quiet    time.Duration
	backoff  backoff.Backoff
	timeout  time.Duration
	workers  int
	log      *slog.Logger
	now      func() time.Time
	onOther  func(name, why string)

	queue workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	running bool
	entries map[string]*entry
	stats   Stats
}

// Stats counts the Writer's requests.
type Stats struct {
	// Applies is how many status applies succeeded; Failures how many
	// failed (each is retried); Conflicts how many were refused because
	// the object had changed since it was read (recomputed, not counted
	// as failures).
	Applies, Failures, Conflicts int64
	// Labels is how many label applies succeeded.
	Labels int64
	// LeftAlone counts catalogs found managed by another controller
	// (catalogd), whose status this Writer does not touch.
	LeftAlone int64
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithFieldManager sets the server-side apply field manager
// (DefaultFieldManager otherwise).
func WithFieldManager(m string) WriterOption { return func(w *Writer) { w.manager = m } }

// WithWriterReplica names this replica in the manager of the Progressing
// condition (default: the host name).
func WithWriterReplica(id string) WriterOption {
	return func(w *Writer) {
		if id != "" {
			w.replica = id
		}
	}
}

// WithMinInterval sets the least time between two applies of one catalog
// that only update the same phase, e.g. byte counts (default 1 s).
func WithMinInterval(d time.Duration) WriterOption { return func(w *Writer) { w.interval = d } }

// WithQuietPeriod sets how long a new sync of a catalog that has settled
// (succeeded, retrying or blocked) at its current generation runs before
// its progress is shown (default 1 s). Polls that find nothing new and
// retries that fail the same way again finish within it and write
// nothing, so they do not churn the status.
func WithQuietPeriod(d time.Duration) WriterOption { return func(w *Writer) { w.quiet = d } }

// WithApplyBackoff sets the retry delays after a failed apply (default
// 200 ms to 5 s).
func WithApplyBackoff(b backoff.Backoff) WriterOption { return func(w *Writer) { w.backoff = b } }

// WithRequestTimeout bounds each request to the apiserver and to storage
// (default 10 s).
func WithRequestTimeout(d time.Duration) WriterOption { return func(w *Writer) { w.timeout = d } }

// WithWorkers sets how many catalogs are written at once (default 4).
func WithWorkers(n int) WriterOption {
	return func(w *Writer) {
		if n > 0 {
			w.workers = n
		}
	}
}

// WithWriterLogger sets the logger.
func WithWriterLogger(l *slog.Logger) WriterOption { return func(w *Writer) { w.log = l } }

// WithLeftAlone calls f once when a catalog is found managed by another
// controller (catalogd), with the reason; the Writer then leaves its
// status alone. For a metric.
func WithLeftAlone(f func(name, why string)) WriterOption { return func(w *Writer) { w.onOther = f } }

// NewWriter returns a Writer for the ClusterCatalogs of src, reading
// published pointers from store. baseURL is where this service serves
// catalogs, without the "/catalogs" path (e.g.
// "https://catalogsync.olmv1-system.svc"): status.urls.base is
// baseURL + "/catalogs/" + name. Call Run to start writing.
func NewWriter(client dynamic.Interface, src *ClusterCatalogs, store storage.Store, baseURL string, opts ...WriterOption) (*Writer, error) {
	// Checked now: the apiserver would refuse every status with a bad one.
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBaseURL, baseURL)
	}
	host, _ := os.Hostname()
	w := &Writer{
		view:     clusterView{src: src, store: store},
		baseURL:  strings.TrimRight(baseURL, "/"),
		manager:  DefaultFieldManager,
		replica:  cmp.Or(host, "catalogsync"),
		interval: time.Second,
		quiet:    time.Second,
		backoff:  backoff.Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second},
		timeout:  10 * time.Second,
		workers:  4,
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		entries:  map[string]*entry{},
	}
	if client != nil { // nil only in this package's tests, with fakes
		w.res = client.Resource(GVR)
	}
	for _, fn := range opts {
		fn(w)
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](w.backoff.Min, w.backoff.Max),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "clustercatalog-status"})
	if src != nil {
		src.subscribe(w.sourceEvent)
	}
	return w, nil
}

// applier is what the Writer asks of the apiserver: server-side apply of
// a ClusterCatalog's status, and of its labels.
type applier interface {
	ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error)
	Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// catalogView is what the Writer reads: a ClusterCatalog as last seen,
// and its published pointer (storage.ErrNotExist when there is none).
type catalogView interface {
	get(name string) (object, bool)
	pointer(ctx context.Context, name string) (catalog.Pointer, error)
}

// clusterView reads ClusterCatalogs from a ClusterCatalogs and pointers from a
// store.
type clusterView struct {
	src   *ClusterCatalogs
	store storage.Store
}

func (v clusterView) get(name string) (object, bool) { return v.src.get(name) }

func (v clusterView) pointer(ctx context.Context, name string) (catalog.Pointer, error) {
	p, _, err := catalog.Current(ctx, v.store, name)
	return p, err
}

// progressManager owns the Progressing condition this replica writes.
func (w *Writer) progressManager() string { return w.manager + "/" + w.replica }

// entry is the Writer's state of one catalog. Fields are guarded by
// Writer.mu, except those marked worker-only: the workqueue hands a
// catalog to one worker at a time.
type entry struct {
	name string

	live    *progress // the running sync's latest state
	waiting *progress // what a sync not started yet waits for
	outcome *progress // how the last sync ended
	// attemptGen and attemptStart are the generation the latest sync
	// started at, and its first event's time; endedAt is when it ended
	// and flushed how far the status has caught up with the ends.
	attemptGen   int64
	attemptStart time.Time
	endedAt      time.Time
	flushed      time.Time
	// late: the sync ended but its end was not written before the lease
	// went to the next holder; written only if nobody else wrote since.
	late bool
	// holdUntil delays showing a new sync of a settled catalog.
	holdUntil time.Time
	ptrStale  bool     // read the pointer again before rendering
	applied   *Status  // the status the server has, as our last apply returned it
	appliedRV string   // its resourceVersion
	ours      []string // resourceVersions our applies produced
	other     string   // why another controller manages it ("" if none)
	waitShown bool     // a wait of the sync to come is on the status

	labelDone bool // our label apply succeeded (reset when someone removes it)

	// Worker-only.
	failures      int
	ptr           pointerState
	ptrFailures   int
	labelFailures int
	labelRetry    time.Time
	appliedKey    string
	appliedAt     time.Time
}

// progress is the Progressing condition a sync event asks for.
type progress struct {
	status     metav1.ConditionStatus
	reason     string
	message    string
	generation int64
	// key names the kind of state (a phase, a layer, an outcome): a new
	// key is written at once, an update of the same key at most every
	// MinInterval.
	key    string
	digest string
	failed bool
	// upToDate: nothing happened; keep the message of the sync that did
	// the work, as the status has it when written.
	upToDate bool
}

type pointerState struct {
	known  bool
	exists bool
	p      catalog.Pointer
	readAt time.Time
}

// Stats returns the request counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Run applies status with the workers until ctx ends, then waits for them
// and returns ctx's error.
func (w *Writer) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return ErrRunning
	}
	w.running = true
	w.mu.Unlock()
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return ctx.Err()
}

// processNext writes one queued catalog's status; false once the queue
// is shut down.
func (w *Writer) processNext(ctx context.Context) bool {
	name, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(name)
	en, wait, err := w.write(ctx, name)
	if en == nil || ctx.Err() != nil {
		return true
	}
	w.requeue(ctx, en, wait, err)
	return true
}

// write brings one catalog's status up to date, or says how long to wait
// before it may. It returns a nil entry for a catalog that is gone.
func (w *Writer) write(ctx context.Context, name string) (*entry, time.Duration, error) {
	o, ok := w.view.get(name)
	if !ok {
		w.mu.Lock()
		delete(w.entries, name) // a catalog created again gets a new one
		w.mu.Unlock()
		w.queue.Forget(name)
		return nil, 0, nil
	}
	w.mu.Lock()
	en := w.entryLocked(name)
	w.mu.Unlock()
	wait, err := w.step(ctx, en, o)
	return en, wait, err
}

// requeue queues the catalog again after a write: with the per-item
// backoff after a failure, after wait otherwise.
func (w *Writer) requeue(ctx context.Context, en *entry, wait time.Duration, err error) {
	switch {
	case errors.Is(err, errConflict):
		// Our view was stale; the informer brings the newer one.
		w.queue.AddRateLimited(en.name)
	case err != nil:
		// NotFound too: right after an apiserver restart the resource
		// is not served yet. A real deletion reaches us through the
		// informer.
		en.failures++
		w.logFailure(ctx, en.failures, "status update failed, retrying", "catalog", en.name, "err", err)
		w.queue.AddRateLimited(en.name)
	default:
		if en.failures > 0 {
			w.log.Info("status updated after failures", "catalog", en.name, "failures", en.failures)
			en.failures = 0
		}
		w.queue.Forget(en.name)
		if wait > 0 {
			w.queue.AddAfter(en.name, wait)
		}
	}
}

// Observe records a sync event; a worker applies it. It only takes a
// lock, so it never holds up the sync.
func (w *Writer) Observe(e pipeline.Event) {
	o, ok := w.view.get(e.Catalog)
	if !ok {
		return // not a ClusterCatalog (any more): nothing to report on
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entryLocked(e.Catalog)
	if e.Time.Before(en.attemptStart) {
		// The end of an earlier sync delivered after the next one began
		// (each sync has its own delivery goroutine): it is superseded.
		return
	}
	en.waiting = nil
	if en.live == nil && !e.Terminal() {
		w.startAttemptLocked(en, o, e.Time, now)
	}
	gen := o.cat.Generation
	if en.live != nil {
		gen = en.attemptGen
	}
	if e.Terminal() {
		en.outcome, en.live, en.endedAt = outcomeOf(e, gen), nil, e.Time
		en.ptrStale = true
	} else {
		// The outcome before this sync gives the reason: the vocabulary
		// has none for "running", and after a failure every sync is a
		// retry.
		_, failedBefore := w.settledLocked(en, o)
		en.live = liveProgress(o.cat.Image, e, gen, failedBefore)
	}
	w.signal(en)
}

// startAttemptLocked notes a new sync. If the catalog has settled at this
// generation, its first moments stay unshown: most repeats end within
// them.
func (w *Writer) startAttemptLocked(en *entry, o object, start, now time.Time) {
	en.attemptGen, en.attemptStart = o.cat.Generation, start
	en.holdUntil, en.late = time.Time{}, false
	// After a wait was shown, the sync must show that it runs.
	if settled, _ := w.settledLocked(en, o); settled && !en.waitShown {
		en.holdUntil = now.Add(w.quiet)
	}
	en.waitShown = false
}

// outcomeOf is the Progressing condition a sync's end asks for: True/
// Succeeded, True/Retrying after a retryable failure, False/Blocked after
// a terminal one.
func outcomeOf(e pipeline.Event, gen int64) *progress {
	if e.Phase == pipeline.PhasePublished {
		p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen, key: "succeeded"}
		if e.Result != nil {
			p.digest = e.Result.Digest
			p.message = successMessage(e.Result)
			p.upToDate = e.Result.Action == pipeline.ActionUpToDate
		}
		return p
	}
	p := &progress{status: metav1.ConditionTrue, reason: ReasonRetrying, generation: gen, key: "failed", failed: true}
	if e.Err != nil {
		p.message = failureMessage(e.Err)
		if !e.Err.Retryable {
			p.status, p.reason = metav1.ConditionFalse, ReasonBlocked
		}
	}
	return p
}

// liveProgress is the Progressing condition of a running sync's phase.
func liveProgress(image string, e pipeline.Event, gen int64, failedBefore bool) *progress {
	p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen,
		key: string(e.Phase), message: progressMessage(image, e)}
	if failedBefore {
		p.reason = ReasonRetrying
	}
	if e.Phase == pipeline.PhasePulling {
		p.key = fmt.Sprintf("%s/%d", e.Phase, e.Layer)
	}
	return p
}

// ObserveWait records that a sync waits (for a slot, the registry's rate,
// or a lease whose holder stopped renewing it), so the status says so
// within a second. A wait on a live holder's lease is not shown: the
// holder reports the catalog.
func (w *Writer) ObserveWait(wt pipeline.Wait) {
	o, ok := w.view.get(wt.Catalog)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entryLocked(wt.Catalog)
	if wt.Over || (wt.Reason == pipeline.WaitLease && !wt.Stalled) {
		if en.waiting != nil && (wt.Over || en.waiting.key == "wait/"+string(wt.Reason)) {
			en.waiting = nil
			w.signal(en)
		}
		return
	}
	_, failedBefore := w.settledLocked(en, o)
	p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: o.cat.Generation,
		key: "wait/" + string(wt.Reason), message: waitMessage(wt)}
	if failedBefore {
		p.reason = ReasonRetrying
	}
	en.waiting = p
	w.signal(en)
}

// Flush waits until the end of the catalog's last sync that ended at or
// after since is on the status (or there is nothing to write), or ctx
// ends; then the sync's lease may go to the next holder. A sync whose end
// could not be written in time writes it later only if nobody else wrote
// the condition meanwhile.
func (w *Writer) Flush(ctx context.Context, name string, since time.Time) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		en := w.entries[name]
		done := en == nil || en.other != "" || (!en.endedAt.IsZero() && !en.endedAt.Before(since) && !en.flushed.Before(en.endedAt))
		if !done && ctx.Err() != nil && en.live == nil {
			en.late = true
		}
		w.mu.Unlock()
		if done || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// settledLocked reports whether the catalog's last sync ended at its
// current generation (known from this process, or from the status a
// previous one wrote), and whether that sync failed.
func (w *Writer) settledLocked(en *entry, o object) (settled, failed bool) {
	if en.outcome != nil {
		return en.outcome.generation == o.cat.Generation, en.outcome.failed
	}
	if c := o.status.Condition(TypeProgressing); c != nil {
		return c.ObservedGeneration == o.cat.Generation, c.Reason == ReasonRetrying || c.Reason == ReasonBlocked
	}
	return false, false
}

// sourceEvent hears of every change of a ClusterCatalog (and resyncs).
func (w *Writer) sourceEvent(name string) {
	o, exists := w.view.get(name)
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entries[name]
	if en == nil {
		if !exists {
			w.queue.Add(name) // let a worker forget it
			return
		}
		en = w.entryLocked(name)
	}
	if exists && !slices.Contains(en.ours, o.rv) {
		// Someone else wrote the object (a spec edit, another replica),
		// or a resync: compare with what the server has now, and re-read
		// what is published (level-based).
		en.applied, en.appliedRV = nil, ""
		en.ptrStale = true
		if !o.labeled {
			en.labelDone = false
		}
	}
	w.signal(en)
}

func (w *Writer) entryLocked(name string) *entry {
	en := w.entries[name]
	if en == nil {
		en = &entry{name: name, ptrStale: true}
		w.entries[name] = en
	}
	return en
}

func (w *Writer) signal(en *entry) { w.queue.Add(en.name) }

// errConflict: the object changed since the status was computed.
var errConflict = errors.New("ClusterCatalog changed since it was read")

// step brings one catalog's status up to date, or says how long to wait
// before it may.
func (w *Writer) step(ctx context.Context, en *entry, o object) (time.Duration, error) {
	if w.leftAlone(ctx, en, o) {
		return 0, nil
	}
	var wait soonest
	if d, err := w.refreshPointer(ctx, en); err != nil {
		wait.add(d)
	}
	wait.add(w.ensureLabel(ctx, en, o))
	r := w.render(en, o)
	wait.add(r.hold)
	writeServ := !sameServing(r.serv, r.base)
	if writeServ && digestOf(r.serv) != digestOf(r.base) && r.now.Sub(en.ptr.readAt) > time.Second {
		// Before the digest on the status changes, read the pointer
		// again: a view older than another replica's would move the
		// status back.
		w.mu.Lock()
		en.ptrStale = true
		w.mu.Unlock()
		return time.Millisecond, nil
	}
	// Progressing first: a reader that sees the new Serving sees how the
	// sync that made it ended.
	d, err := w.writeProgressing(ctx, en, &r)
	if err != nil {
		return 0, err
	}
	wait.add(d)
	if writeServ {
		// Computed against the status before our Progressing apply,
		// which touched no field of it.
		if _, err := w.apply(ctx, en, w.manager, r.rv, r.serv); err != nil {
			return 0, err
		}
	}
	return time.Duration(wait), nil
}

// soonest keeps the shortest positive wait added.
type soonest time.Duration

func (s *soonest) add(d time.Duration) {
	if d > 0 && (*s == 0 || d < time.Duration(*s)) {
		*s = soonest(d)
	}
}

// ensureLabel sets the metadata.name label where it is missing, and
// returns how long to wait before trying again after a failure. The label
// is a convenience: failing to set it must not hold the status back.
func (w *Writer) ensureLabel(ctx context.Context, en *entry, o object) time.Duration {
	w.mu.Lock()
	needLabel := !o.labeled && !en.labelDone
	w.mu.Unlock()
	if !needLabel || w.now().Before(en.labelRetry) {
		return 0
	}
	if err := w.applyLabel(ctx, en); err != nil {
		d := w.backoff.Delay(en.labelFailures, 0)
		en.labelFailures++
		en.labelRetry = w.now().Add(d)
		w.logFailure(ctx, en.labelFailures, "set metadata.name label", "catalog", en.name, "err", err)
		return d
	}
	en.labelFailures = 0
	return 0
}

// rendered is the status a step computed, and what it was computed from.
type rendered struct {
	now     time.Time
	base    *Status // the status the server has, as far as known
	rv      string  // its resourceVersion
	endedAt time.Time
	serv    *Status           // the fields that follow from the pointer
	prog    *metav1.Condition // this replica's Progressing, nil if nothing to say
	key     string            // the kind of state prog shows
	hold    time.Duration     // how long a new sync is still held back
}

// render computes the status of one catalog from what is known now.
func (w *Writer) render(en *entry, o object) rendered {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := rendered{now: w.now(), base: en.applied, rv: en.appliedRV, endedAt: en.endedAt}
	if r.base == nil {
		r.base, r.rv = o.status, o.rv
	}
	r.serv = w.renderServingLocked(en, o, r.base, r.now)
	r.prog, r.key, r.hold = w.renderProgressLocked(en, o, r.base, r.now)
	return r
}

// writeProgressing applies r's Progressing condition when it changed, at
// most every MinInterval for updates of the same state (byte counts), and
// says how long to wait for the next. On success r's base and rv are the
// status the apply returned.
func (w *Writer) writeProgressing(ctx context.Context, en *entry, r *rendered) (time.Duration, error) {
	if r.prog == nil || sameProgressing(r.prog, r.base) {
		w.markFlushed(en, r.endedAt, r.key)
		return 0, nil
	}
	if next := en.appliedAt.Add(w.interval); r.key == en.appliedKey && r.now.Before(next) {
		return next.Sub(r.now), nil
	}
	got, err := w.apply(ctx, en, w.progressManager(), r.rv, &Status{Conditions: []metav1.Condition{*r.prog}})
	if err != nil {
		return 0, err
	}
	r.base, r.rv = got.status, got.rv
	en.appliedAt = r.now
	if strings.HasPrefix(r.key, "wait/") {
		w.mu.Lock()
		en.waitShown = true
		w.mu.Unlock()
	}
	w.markFlushed(en, r.endedAt, r.key)
	return 0, nil
}

// markFlushed notes that the status shows the state of key, and the end
// of the sync that ended at endedAt if it has ended.
func (w *Writer) markFlushed(en *entry, endedAt time.Time, key string) {
	if key != "" {
		en.appliedKey = key
	}
	w.mu.Lock()
	if endedAt.After(en.flushed) {
		en.flushed = endedAt
	}
	w.mu.Unlock()
}

// refreshPointer re-reads the published pointer when it is stale; on
// failure it returns how long to wait before trying again.
func (w *Writer) refreshPointer(ctx context.Context, en *entry) (time.Duration, error) {
	w.mu.Lock()
	readPtr := en.ptrStale
	en.ptrStale = false
	w.mu.Unlock()
	if !readPtr {
		return 0, nil
	}
	if err := w.readPointer(ctx, en); err != nil {
		// Status still goes out with what is known; Serving waits.
		w.mu.Lock()
		en.ptrStale = true
		w.mu.Unlock()
		d := w.backoff.Delay(en.ptrFailures, 0)
		en.ptrFailures++
		w.logFailure(ctx, en.ptrFailures, "read published pointer", "catalog", en.name, "err", err)
		return d, err
	}
	en.ptrFailures = 0
	return 0, nil
}

// logFailure warns of the first failure of a series and of every 20th;
// the others go to debug, so an outage does not flood the log.
func (w *Writer) logFailure(ctx context.Context, failures int, msg string, args ...any) {
	lvl := slog.LevelDebug
	if failures == 1 || failures%20 == 0 {
		lvl = slog.LevelWarn
	}
	w.log.Log(ctx, lvl, msg, append(args, "failures", failures)...)
}

func (w *Writer) readPointer(ctx context.Context, en *entry) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	p, err := w.view.pointer(ctx, en.name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		en.ptr = pointerState{known: true, readAt: w.now()}
	case err != nil:
		return err
	default:
		en.ptr = pointerState{known: true, exists: true, p: p, readAt: w.now()}
	}
	return nil
}

// renderServingLocked computes the fields that follow from the published
// pointer: the Serving condition, resolvedSource, urls and lastUnpacked.
// Every replica computes the same, so any may write them.
func (w *Writer) renderServingLocked(en *entry, o object, base *Status, now time.Time) *Status {
	gen := o.cat.Generation
	st := &Status{}
	var serv *metav1.Condition
	switch {
	case o.cat.Unavailable():
		// As catalogd: not serving, and no URL to read it from.
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUserSpecifiedUnavailable, Message: msgUserUnavailable, ObservedGeneration: gen}
	case en.ptr.exists:
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionTrue, Reason: ReasonAvailable,
			Message: servingMessage(en.ptr.p), ObservedGeneration: gen}
		st.ResolvedSource = &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{Ref: en.ptr.p.ResolvedRef}}
		st.URLs = &URLs{Base: w.baseURL + "/catalogs/" + o.cat.Name}
		t := metav1.NewTime(en.ptr.p.PublishedAt.UTC().Truncate(time.Second))
		st.LastUnpacked = &t
	case en.ptr.known:
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUnavailable, Message: msgNotPublished, ObservedGeneration: gen}
	case base.Condition(TypeServing) != nil:
		// The pointer could not be read: keep what is there, so the
		// apply does not drop it.
		c := *base.Condition(TypeServing)
		serv = &c
		st.ResolvedSource, st.URLs, st.LastUnpacked = base.ResolvedSource, base.URLs, base.LastUnpacked
	}
	if serv != nil {
		keepTransition(serv, base, now)
		st.Conditions = append(st.Conditions, *serv)
	}
	return st
}

// renderProgressLocked computes the Progressing condition this replica
// has to say, the key of its state, and how long a new sync is still held
// back. It returns nil when this replica has nothing to say: no sync of
// its own, or the end of its last one is written already (a later sync,
// maybe another replica's, owns the condition since).
func (w *Writer) renderProgressLocked(en *entry, o object, base *Status, now time.Time) (*metav1.Condition, string, time.Duration) {
	gen := o.cat.Generation
	if o.cat.Unavailable() {
		// As catalogd: done with what was asked.
		c := &metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: msgUserUnavailable, ObservedGeneration: gen}
		keepTransition(c, base, now)
		return c, "unavailable", 0
	}
	var p *progress
	var hold time.Duration
	if en.outcome != nil && en.flushed.Before(en.endedAt) {
		p = en.outcome
		if en.late && o.progressOwner != "" && o.progressOwner != w.progressManager() {
			p = nil // the next holder wrote since: this end is old news
		}
	}
	if en.waiting != nil {
		p = en.waiting
	}
	if en.live != nil {
		if now.Before(en.holdUntil) {
			hold = en.holdUntil.Sub(now)
		} else {
			p = en.live
		}
	}
	if p == nil {
		return nil, "", hold
	}
	c := &metav1.Condition{Type: TypeProgressing, Status: p.status, Reason: p.reason, Message: p.message, ObservedGeneration: p.generation}
	if p.upToDate {
		// Nothing happened: keep saying what the sync that did the work
		// said, as the status has it now.
		if prev := base.Condition(TypeProgressing); prev != nil && prev.Reason == ReasonSucceeded &&
			prev.ObservedGeneration == p.generation && strings.Contains(prev.Message, p.digest) &&
			strings.HasPrefix(prev.Message, "Published ") {
			c.Message = prev.Message
		}
	}
	keepTransition(c, base, now)
	return c, p.key, hold
}

// keepTransition moves a condition's transition time only when its
// status changes.
func keepTransition(c *metav1.Condition, base *Status, now time.Time) {
	if prev := base.Condition(c.Type); prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
		c.LastTransitionTime = prev.LastTransitionTime
	} else if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	}
}

// servingView is the part of a status that follows from the pointer, in
// a canonical form.
type servingView struct {
	Serving        *metav1.Condition
	ResolvedSource *ResolvedSource
	URLs           *URLs
	LastUnpacked   *metav1.Time
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sameServing reports whether a and b agree on the fields that follow
// from the pointer; other conditions and the order of the list do not
// count.
func sameServing(a, b *Status) bool {
	view := func(s *Status) servingView {
		if s == nil {
			return servingView{}
		}
		return servingView{s.Condition(TypeServing), s.ResolvedSource, s.URLs, s.LastUnpacked}
	}
	return jsonOf(view(a)) == jsonOf(view(b))
}

func sameProgressing(c *metav1.Condition, b *Status) bool {
	return jsonOf(c) == jsonOf(b.Condition(TypeProgressing))
}

// digestOf is the resolved reference a status names ("" if none).
func digestOf(s *Status) string {
	if s == nil || s.ResolvedSource == nil || s.ResolvedSource.Image == nil {
		return ""
	}
	return s.ResolvedSource.Image.Ref
}

// apply applies st as manager, on the condition that the object is still
// at resourceVersion rv (when known).
func (w *Writer) apply(ctx context.Context, en *entry, manager, rv string, st *Status) (object, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return object{}, fmt.Errorf("status of %s: %w", en.name, err)
	}
	meta := map[string]any{"name": en.name}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   meta,
		"status":     raw,
	}}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	// Force: these fields are this service's to write, as a controller's.
	got, err := w.res.ApplyStatus(ctx, en.name, u, metav1.ApplyOptions{FieldManager: manager, Force: true})
	if err == nil {
		var o object
		if o, err = parseObject(got); err == nil {
			if o.status == nil {
				o.status = &Status{}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.stats.Applies++
			en.applied, en.appliedRV = o.status, o.rv
			en.ours = append(en.ours, o.rv)
			if len(en.ours) > 16 {
				en.ours = en.ours[1:]
			}
			return o, nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if apierrors.IsConflict(err) {
		w.stats.Conflicts++
		en.applied, en.appliedRV = nil, ""
		return object{}, fmt.Errorf("apply status of %s: %w", en.name, errConflict)
	}
	w.stats.Failures++
	return object{}, fmt.Errorf("apply status of %s: %w", en.name, err)
}

// leftAlone reports whether another controller (catalogd) manages the
// catalog, saying so once; its status is then not written at all.
func (w *Writer) leftAlone(ctx context.Context, en *entry, o object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case o.other != "" && en.other == "":
		en.other = o.other
		w.stats.LeftAlone++
		w.log.WarnContext(ctx, "ClusterCatalog is managed by catalogd too; leaving its status alone (its content is still served)",
			"catalog", en.name, "why", o.other)
		if w.onOther != nil {
			w.onOther(en.name, o.other)
		}
	case o.other == "" && en.other != "":
		en.other = ""
		en.ptrStale = true
		w.log.InfoContext(ctx, "ClusterCatalog no longer managed by catalogd; writing its status again", "catalog", en.name)
	}
	return en.other != ""
}

// applyLabel sets the metadata.name label, as catalogd's webhook does.
func (w *Writer) applyLabel(ctx context.Context, en *entry) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": map[string]any{
			"name":   en.name,
			"labels": map[string]any{MetadataNameLabel: en.name},
		},
	}}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	got, err := w.res.Apply(ctx, en.name, u, metav1.ApplyOptions{FieldManager: w.manager, Force: true})
	if err != nil {
		return fmt.Errorf("apply label of %s: %w", en.name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Labels++
	en.labelDone = true
	en.ours = append(en.ours, got.GetResourceVersion())
	// The answer is the object with its status: the status apply that
	// follows starts from it, not from the version before the label.
	if o, err := parseObject(got); err == nil {
		en.applied, en.appliedRV = cmp.Or(o.status, &Status{}), o.rv
	}
	return nil
}
