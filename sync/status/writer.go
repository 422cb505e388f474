package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	stdsync "sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	csync "github.com/catalogsync/catalogsync/sync"
)

var (
	// ErrRunning is returned by a second call of Writer.Run.
	ErrRunning = errors.New("status writer already running")
	// ErrBaseURL is returned by NewWriter for a base URL that the CRD
	// would refuse in status.urls.base.
	ErrBaseURL = errors.New("base URL must be an absolute http or https URL")
)

// Writer reports syncs in ClusterCatalog status. It implements
// sync.Observer: give it to every sync (the engine's observers). It
// applies the status with server-side apply on the status subresource,
// only when something changed, and at most about once per MinInterval per
// catalog while a phase reports bytes; a new phase or the end of a sync
// is written at once. It never blocks the sync: events update the desired
// status in memory and a goroutine per catalog applies the latest one,
// retrying with backoff while the apiserver fails, so the status catches
// up when it is back. Serving is read from storage (the published
// pointer), never inferred from earlier status.
type Writer struct {
	res      dynamic.NamespaceableResourceInterface
	src      *Source
	store    storage.Store
	baseURL  string
	manager  string
	interval time.Duration
	quiet    time.Duration
	backoff  csync.Backoff
	timeout  time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu      stdsync.Mutex
	ctx     context.Context // set by Run; workers start then
	closed  bool            // Run is returning
	wg      stdsync.WaitGroup
	entries map[string]*entry
	stats   Stats
}

// Stats counts the Writer's requests.
type Stats struct {
	// Applies is how many status applies succeeded; Failures how many
	// failed (each is retried).
	Applies, Failures int64
	// Labels is how many label applies succeeded.
	Labels int64
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithFieldManager sets the server-side apply field manager
// (DefaultFieldManager otherwise).
func WithFieldManager(m string) WriterOption { return func(w *Writer) { w.manager = m } }

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
// 200 ms to 5 s, with jitter).
func WithApplyBackoff(b csync.Backoff) WriterOption { return func(w *Writer) { w.backoff = b } }

// WithRequestTimeout bounds each request to the apiserver and to storage
// (default 10 s).
func WithRequestTimeout(d time.Duration) WriterOption { return func(w *Writer) { w.timeout = d } }

// WithWriterLogger sets the logger.
func WithWriterLogger(l *slog.Logger) WriterOption { return func(w *Writer) { w.log = l } }

// NewWriter returns a Writer for the ClusterCatalogs of src, reading
// published pointers from store. baseURL is where this service serves
// catalogs, without the "/catalogs" path (e.g.
// "https://catalogsync.olmv1-system.svc"): status.urls.base is
// baseURL + "/catalogs/" + name. Call Run to start writing.
func NewWriter(client dynamic.Interface, src *Source, store storage.Store, baseURL string, opts ...WriterOption) (*Writer, error) {
	// Checked now: the apiserver would refuse every status with a bad one.
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBaseURL, baseURL)
	}
	w := &Writer{
		res:      client.Resource(GVR),
		src:      src,
		store:    store,
		baseURL:  strings.TrimRight(baseURL, "/"),
		manager:  DefaultFieldManager,
		interval: time.Second,
		quiet:    time.Second,
		backoff:  csync.Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second},
		timeout:  10 * time.Second,
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		entries:  map[string]*entry{},
	}
	for _, fn := range opts {
		fn(w)
	}
	src.subscribe(w.sourceEvent)
	return w, nil
}

// entry is the Writer's state of one catalog. Fields are guarded by
// Writer.mu, except those the catalog's worker alone uses.
type entry struct {
	name string
	wake chan struct{}

	started bool
	kick    bool      // the apiserver answers again: skip the backoff
	live    *progress // the running sync's latest state
	outcome *progress // how the last sync ended
	// attemptGen and attemptStart are the generation the latest sync
	// started at, and its first event's time.
	attemptGen   int64
	attemptStart time.Time
	// holdUntil delays showing a new sync of a settled catalog.
	holdUntil time.Time
	ptrStale  bool     // read the pointer again before rendering
	applied   *Status  // the status the server has, as our last apply returned it
	ours      []string // resourceVersions our applies produced

	labelDone bool // our label apply succeeded (reset when someone removes it)

	// Worker only.
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
}

type pointerState struct {
	known  bool
	exists bool
	p      catalog.Pointer
}

// Stats returns the request counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Run applies status until ctx ends, then waits for its goroutines and
// returns ctx's error.
func (w *Writer) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.ctx != nil {
		w.mu.Unlock()
		return ErrRunning
	}
	w.ctx = ctx
	for _, en := range w.entries {
		w.startLocked(en)
	}
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	w.closed = true // no worker starts after this, so Wait is final
	w.mu.Unlock()
	w.wg.Wait()
	return ctx.Err()
}

// Observe records a sync event; the catalog's worker applies it. It only
// takes a lock, so it never holds up the sync.
func (w *Writer) Observe(e csync.Event) {
	o, ok := w.src.get(e.Catalog)
	if !ok {
		return // not a ClusterCatalog (any more): nothing to report on
	}
	cat := o.cat
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entryLocked(e.Catalog)
	if e.Time.Before(en.attemptStart) {
		// The end of an earlier sync delivered after the next one began
		// (each sync has its own delivery goroutine): it is superseded.
		return
	}
	if en.live == nil && !e.Terminal() {
		// A new sync. If the catalog has settled at this generation, its
		// first moments stay unshown: most repeats end within them.
		en.attemptGen, en.attemptStart = cat.Generation, e.Time
		en.holdUntil = time.Time{}
		if settled, _ := w.settledLocked(en, o); settled {
			en.holdUntil = now.Add(w.quiet)
		}
	}
	gen := cat.Generation
	if en.live != nil {
		gen = en.attemptGen
	}
	switch e.Phase {
	case csync.PhasePublished:
		p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen, key: "succeeded"}
		if e.Result != nil {
			p.digest = e.Result.Digest
			p.message = successMessage(e.Result)
			if e.Result.Action == csync.ActionUpToDate {
				// Nothing happened: keep saying what the last real sync did.
				if prev := w.lastSuccessLocked(en, o); prev != "" && strings.Contains(prev, e.Result.Digest) {
					p.message = prev
				}
			}
		}
		en.outcome, en.live = p, nil
		en.ptrStale = true
	case csync.PhaseFailed:
		p := &progress{status: metav1.ConditionTrue, reason: ReasonRetrying, generation: gen, key: "failed", failed: true}
		if e.Err != nil {
			p.message = failureMessage(e.Err)
			if !e.Err.Retryable {
				p.status, p.reason = metav1.ConditionFalse, ReasonBlocked
			}
		}
		en.outcome, en.live = p, nil
		en.ptrStale = true
	default:
		// The outcome before this sync gives the reason: the vocabulary
		// has none for "running", and after a failure every sync is a
		// retry.
		_, failedBefore := w.settledLocked(en, o)
		p := &progress{status: metav1.ConditionTrue, reason: ReasonSucceeded, generation: gen,
			key: string(e.Phase), message: progressMessage(cat.Image, e)}
		if failedBefore {
			p.reason = ReasonRetrying
		}
		if e.Phase == csync.PhasePulling {
			p.key = fmt.Sprintf("%s/%d", e.Phase, e.Layer)
		}
		en.live = p
	}
	w.signal(en)
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

// lastSuccessLocked returns the message of the last successful sync, from
// memory or from the status.
func (w *Writer) lastSuccessLocked(en *entry, o object) string {
	if en.outcome != nil {
		if en.outcome.reason == ReasonSucceeded {
			return en.outcome.message
		}
		return ""
	}
	if c := o.status.Condition(TypeProgressing); c != nil && c.Reason == ReasonSucceeded {
		return c.Message
	}
	return ""
}

// sourceEvent hears of every change of a ClusterCatalog, and of the
// apiserver answering again.
func (w *Writer) sourceEvent(name string, ev sourceEvent) {
	o, exists := w.src.get(name)
	w.mu.Lock()
	defer w.mu.Unlock()
	en := w.entries[name]
	if en == nil {
		if !exists {
			return
		}
		en = w.entryLocked(name)
	}
	switch {
	case ev == evReachable:
		en.kick, en.ptrStale = true, true
	case exists && !slices.Contains(en.ours, o.rv):
		// Someone else wrote the object (a spec edit, another writer):
		// compare with what the server has now, not with what we wrote.
		en.applied = nil
		// Re-read what is published too: level-based, on any outside
		// change.
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
		en = &entry{name: name, wake: make(chan struct{}, 1), ptrStale: true}
		w.entries[name] = en
		if w.ctx != nil {
			w.startLocked(en)
		}
	}
	return en
}

func (w *Writer) startLocked(en *entry) {
	if en.started || w.closed {
		return
	}
	en.started = true
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.work(w.ctx, en)
	}()
}

func (w *Writer) signal(en *entry) {
	select {
	case en.wake <- struct{}{}:
	default:
	}
}

// work applies the catalog's desired status whenever it changes, until
// the catalog is gone or ctx ends.
func (w *Writer) work(ctx context.Context, en *entry) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	failures := 0
	var retryAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-en.wake:
		case <-timer.C:
		}
		o, ok := w.src.get(en.name)
		if !ok {
			w.mu.Lock()
			// Checked again under the lock: a catalog created again
			// after this check finds no entry and gets a new one.
			if _, back := w.src.get(en.name); back {
				w.mu.Unlock()
				w.signal(en)
				continue
			}
			delete(w.entries, en.name)
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		kick := en.kick
		en.kick = false
		w.mu.Unlock()
		now := w.now()
		if now.Before(retryAt) && !kick {
			timer.Reset(retryAt.Sub(now))
			continue
		}
		wait, err := w.step(ctx, en, o)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// NotFound too: right after an apiserver restart the resource
			// is not served yet. A real deletion reaches us through the
			// watch and ends this loop.
			d := w.backoff.Delay(failures, 0)
			failures++
			retryAt = w.now().Add(d)
			w.logFailure(ctx, failures, "status update failed, retrying", "catalog", en.name, "in", d.Round(time.Millisecond), "err", err)
			timer.Reset(d)
			continue
		}
		if failures > 0 {
			w.log.Info("status updated after failures", "catalog", en.name, "failures", failures)
		}
		failures, retryAt = 0, time.Time{}
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

// step brings one catalog's status up to date, or says how long to wait
// before it may.
func (w *Writer) step(ctx context.Context, en *entry, o object) (time.Duration, error) {
	var wait time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	w.mu.Lock()
	readPtr := en.ptrStale
	en.ptrStale = false
	w.mu.Unlock()
	if readPtr {
		if err := w.readPointer(ctx, en); err != nil {
			// Status still goes out with what is known; Serving waits.
			w.mu.Lock()
			en.ptrStale = true
			w.mu.Unlock()
			d := w.backoff.Delay(en.ptrFailures, 0)
			en.ptrFailures++
			w.logFailure(ctx, en.ptrFailures, "read published pointer", "catalog", en.name, "err", err)
			soonest(d)
		} else {
			en.ptrFailures = 0
		}
	}
	w.mu.Lock()
	needLabel := !o.labeled && !en.labelDone
	w.mu.Unlock()
	if needLabel && !w.now().Before(en.labelRetry) {
		// The label is a convenience: failing to set it must not hold
		// the status back.
		if err := w.applyLabel(ctx, en); err != nil {
			d := w.backoff.Delay(en.labelFailures, 0)
			en.labelFailures++
			en.labelRetry = w.now().Add(d)
			w.logFailure(ctx, en.labelFailures, "set metadata.name label", "catalog", en.name, "err", err)
			soonest(d)
		} else {
			en.labelFailures = 0
		}
	}

	w.mu.Lock()
	now := w.now()
	desired, key, hold := w.renderLocked(en, o, now)
	base := en.applied
	if base == nil {
		base = o.status
	}
	w.mu.Unlock()
	soonest(hold)
	if sameStatus(desired, base) {
		en.appliedKey = key
		return wait, nil
	}
	if key == en.appliedKey {
		if next := en.appliedAt.Add(w.interval); now.Before(next) {
			soonest(next.Sub(now))
			return wait, nil
		}
	}
	got, err := w.applyStatus(ctx, en.name, desired)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.stats.Failures++
		return 0, err
	}
	w.stats.Applies++
	en.applied = got.status
	en.ours = append(en.ours, got.rv)
	if len(en.ours) > 16 {
		en.ours = en.ours[1:]
	}
	en.appliedKey, en.appliedAt = key, now
	return wait, nil
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
	p, _, err := catalog.Current(ctx, w.store, en.name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		en.ptr = pointerState{known: true}
	case err != nil:
		return err
	default:
		en.ptr = pointerState{known: true, exists: true, p: p}
	}
	return nil
}

// renderLocked computes the status the catalog should have now, the key
// of its Progressing state, and how long a new sync is still held back.
func (w *Writer) renderLocked(en *entry, o object, now time.Time) (*Status, string, time.Duration) {
	base := en.applied
	if base == nil {
		base = o.status
	}
	gen := o.cat.Generation
	st := &Status{}
	var prog, serv *metav1.Condition
	var key string
	var hold time.Duration
	if o.cat.Unavailable() {
		// As catalogd: done with what was asked, and not serving.
		prog = &metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: msgUserUnavailable, ObservedGeneration: gen}
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUserSpecifiedUnavailable, Message: msgUserUnavailable, ObservedGeneration: gen}
		key = "unavailable"
	} else {
		p := en.outcome
		if en.live != nil {
			if now.Before(en.holdUntil) {
				hold = en.holdUntil.Sub(now)
			} else {
				p = en.live
			}
		}
		switch {
		case p != nil:
			prog = &metav1.Condition{Type: TypeProgressing, Status: p.status, Reason: p.reason, Message: p.message, ObservedGeneration: p.generation}
			key = p.key
		case base.Condition(TypeProgressing) != nil:
			// Nothing new from this process: keep what is there, so the
			// apply does not drop it.
			c := *base.Condition(TypeProgressing)
			prog = &c
			key = "kept"
		}
		switch {
		case en.ptr.exists:
			serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionTrue, Reason: ReasonAvailable,
				Message: servingMessage(en.ptr.p.Digest, en.ptr.p.Ref), ObservedGeneration: gen}
			st.ResolvedSource = &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{Ref: en.ptr.p.ResolvedRef}}
			st.URLs = &URLs{Base: w.baseURL + "/catalogs/" + o.cat.Name}
			t := metav1.NewTime(en.ptr.p.PublishedAt.UTC().Truncate(time.Second))
			st.LastUnpacked = &t
		case en.ptr.known:
			serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUnavailable, Message: msgNotPublished, ObservedGeneration: gen}
		case base.Condition(TypeServing) != nil:
			c := *base.Condition(TypeServing)
			serv = &c
			st.ResolvedSource, st.URLs, st.LastUnpacked = base.ResolvedSource, base.URLs, base.LastUnpacked
		}
	}
	for _, c := range []*metav1.Condition{prog, serv} {
		if c == nil {
			continue
		}
		// The transition time moves only when the status does.
		if prev := base.Condition(c.Type); prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
			c.LastTransitionTime = prev.LastTransitionTime
		} else if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		}
		st.Conditions = append(st.Conditions, *c)
	}
	return st, key, hold
}

// ownedView is the part of a status the Writer owns, in a canonical form.
type ownedView struct {
	Progressing, Serving *metav1.Condition
	ResolvedSource       *ResolvedSource
	URLs                 *URLs
	LastUnpacked         *metav1.Time
}

// sameStatus reports whether a and b agree on every field the Writer
// owns; other writers' conditions and the order of the list do not count.
func sameStatus(a, b *Status) bool {
	view := func(s *Status) []byte {
		var v ownedView
		if s != nil {
			v = ownedView{Progressing: s.Condition(TypeProgressing), Serving: s.Condition(TypeServing),
				ResolvedSource: s.ResolvedSource, URLs: s.URLs, LastUnpacked: s.LastUnpacked}
		}
		b, _ := json.Marshal(v)
		return b
	}
	return string(view(a)) == string(view(b))
}

func (w *Writer) applyStatus(ctx context.Context, name string, st *Status) (object, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return object{}, fmt.Errorf("status of %s: %w", name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"status":     raw,
	}}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	// Force: the status is this service's to write, as a controller's.
	got, err := w.res.ApplyStatus(ctx, name, u, metav1.ApplyOptions{FieldManager: w.manager, Force: true})
	if err != nil {
		return object{}, fmt.Errorf("apply status of %s: %w", name, err)
	}
	o, err := parseObject(got)
	if err != nil {
		return object{}, err
	}
	if o.status == nil {
		o.status = &Status{}
	}
	return o, nil
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
	w.stats.Labels++
	en.labelDone = true
	en.ours = append(en.ours, got.GetResourceVersion())
	w.mu.Unlock()
	return nil
}
