// Package engine decides when syncs run: it coalesces triggers into at
// most one running and one queued sync per catalog, bounds concurrency and
// the rate per registry, retries with backoff and polls what is due.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// ErrUnknownCatalog is returned when a trigger names a catalog that is not
// configured: a trigger never decides what gets pulled.
var ErrUnknownCatalog = errors.New("unknown catalog")

// CatalogSet is the configured catalogs: a static config file, or the
// cluster's ClusterCatalogs. It is read at each use, so changes apply.
type CatalogSet interface {
	Catalogs() []catalogspec.Catalog
}

// StaticCatalogs is a fixed CatalogSet.
type StaticCatalogs []catalogspec.Catalog

// Catalogs returns the fixed list.
func (s StaticCatalogs) Catalogs() []catalogspec.Catalog { return s }

// Runner runs one catalog's sync; *pipeline.Pipeline is one.
type Runner interface {
	// HoldLease takes the catalog's sync lease across replicas, waiting
	// while another holds it; the context it returns carries the lease
	// (Run does not take it again) and ends if it is lost.
	HoldLease(ctx context.Context, name string, obs []pipeline.Observer) (context.Context, func(), error)
	// Run syncs c, reporting progress to obs.
	Run(ctx context.Context, c catalogspec.Catalog, obs ...pipeline.Observer) (pipeline.Result, error)
}

// OpState is where an operation stands.
type OpState string

// The states of an operation.
const (
	OpQueued    OpState = "Queued"
	OpRunning   OpState = "Running"
	OpSucceeded OpState = "Succeeded"
	OpFailed    OpState = "Failed"
)

// Operation is one sync the engine ran or will run. Triggers that arrive
// while a sync is queued join its operation instead of making another.
type Operation struct {
	ID      string   `json:"id"`
	Catalog string   `json:"catalog"`
	Reasons []string `json:"reasons"`
	// MoreReasons counts the triggers that joined past MaxReasons.
	MoreReasons int       `json:"moreReasons,omitempty"`
	State       OpState   `json:"state"`
	Created     time.Time `json:"created"`
	Started     time.Time `json:"started,omitzero"`
	Finished    time.Time `json:"finished,omitzero"`
	// Progress is the last event seen while running.
	Progress *pipeline.Event  `json:"progress,omitempty"`
	Result   *pipeline.Result `json:"result,omitempty"`
	Error    *pipeline.Error  `json:"error,omitempty"`
}

// CatalogState is what the engine knows of one catalog right now.
type CatalogState struct {
	Catalog catalogspec.Catalog
	// Running and Queued are the current and next operation, if any.
	Running, Queued *Operation
	// Last is the last finished operation.
	Last *Operation
	// NextRetry is when a failed sync is retried (zero: none planned).
	NextRetry time.Time
	// Failures counts consecutive failed syncs.
	Failures int
}

// Option configures an Engine.
type Option func(*Engine)

// WithMaxConcurrent caps syncs running at once over all catalogs.
func WithMaxConcurrent(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.slots = make(chan struct{}, n)
		}
	}
}

// WithRegistryRate limits how often syncs may start against one registry
// host (per second, with a burst). A sync that must wait stays queued.
func WithRegistryRate(perSecond float64, burst int) Option {
	return func(e *Engine) { e.regRate, e.regBurst = rate.Limit(perSecond), max(burst, 1) }
}

// WithBackoff sets the retry backoff for failed syncs.
func WithBackoff(b backoff.Backoff) Option { return func(e *Engine) { e.backoff = b } }

// WithObservers adds observers to every sync the engine runs.
func WithObservers(obs ...pipeline.Observer) Option {
	return func(e *Engine) { e.observers = append(e.observers, obs...) }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithSettle makes a queued sync wait until triggers have been quiet for
// settle (at most maxSettle after the first), so the burst of events one
// push makes (a multi-arch image sends one per platform, then the index)
// ends in one sync. 0 starts at once.
func WithSettle(settle, maxSettle time.Duration) Option {
	return func(e *Engine) { e.settle, e.maxSettle = max(settle, 0), max(maxSettle, settle) }
}

// WithStoreCheck makes every sync fail at once, without retries, while
// check returns an error: the store refuses this process's writes, so no
// sync can succeed, and the error (which names the store) says why on the
// catalog's status. RetryFailed starts them again once it is fixed.
func WithStoreCheck(check func() error) Option { return func(e *Engine) { e.storeCheck = check } }

// WithClock replaces time.Now for due-ness (tests).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithHistory sets how many finished operations are kept for lookups.
func WithHistory(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.history = n
		}
	}
}

// Engine runs syncs on demand. Triggers (webhooks, events, REST, polls)
// for one catalog coalesce into at most one running and one queued sync;
// the queued one resolves the newest digest when it starts, so no trigger
// is lost and none causes a redundant pull. It is safe for concurrent use.
type Engine struct {
	pl        Runner
	settle    time.Duration
	maxSettle time.Duration
	set       CatalogSet
	store     storage.Store
	slots     chan struct{}
	regRate   rate.Limit
	regBurst  int
	backoff   backoff.Backoff
	history   int
	log       *slog.Logger
	now       func() time.Time

	storeCheck func() error
	observers  []pipeline.Observer

	mu       sync.Mutex
	states   map[string]*catalogState
	ops      map[string]*Operation
	finished []string // op ids in finishing order, for trimming
	limiters map[string]*rate.Limiter
	ctx      context.Context
	wg       sync.WaitGroup
}

type catalogState struct {
	running, queued, last *Operation
	// notBefore is when the queued operation may start: triggers keep
	// pushing it back by the settle time, up to maxSettle after the first.
	notBefore time.Time
	retry     *time.Timer
	nextRetry time.Time
	failures  int
}

// New returns an Engine that runs syncs with pl for the catalogs of
// set, reading poll records from store.
func New(pl Runner, set CatalogSet, store storage.Store, opts ...Option) *Engine {
	e := &Engine{
		pl:        pl,
		set:       set,
		store:     store,
		slots:     make(chan struct{}, 4),
		settle:    500 * time.Millisecond,
		maxSettle: 5 * time.Second,
		regRate:   rate.Inf,
		regBurst:  1,
		backoff:   backoff.Default,
		history:   1000,
		log:       slog.New(slog.DiscardHandler),
		now:       time.Now,
		states:    map[string]*catalogState{},
		ops:       map[string]*Operation{},
		limiters:  map[string]*rate.Limiter{},
		ctx:       context.Background(),
	}
	for _, fn := range opts {
		fn(e)
	}
	return e
}

// Start binds the engine to ctx: syncs run under it, and Wait returns
// once they have all stopped after ctx ends.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	e.ctx = ctx
	e.mu.Unlock()
	go func() {
		<-ctx.Done()
		e.mu.Lock()
		for _, st := range e.states {
			if st.retry != nil {
				st.retry.Stop()
			}
		}
		e.mu.Unlock()
	}()
}

// Wait blocks until every started sync has returned.
func (e *Engine) Wait() { e.wg.Wait() }

func (e *Engine) lookup(name string) (catalogspec.Catalog, bool) {
	for _, c := range e.set.Catalogs() {
		if c.Name == name {
			return c, true
		}
	}
	return catalogspec.Catalog{}, false
}

// Trigger asks for a sync of the named catalog and returns the operation
// that will carry it out. It returns at once: the sync runs in the
// background, after the one already running if any.
func (e *Engine) Trigger(ctx context.Context, name, reason string) (Operation, error) {
	c, ok := e.lookup(name)
	if !ok {
		return Operation{}, fmt.Errorf("%w %q", ErrUnknownCatalog, name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.state(name)
	if st.queued != nil {
		st.queued.addReason(reason)
		st.notBefore = time.Now().Add(e.settle)
		if limit := st.queued.Created.Add(e.maxSettle); st.notBefore.After(limit) {
			st.notBefore = limit
		}
		return *st.queued, nil
	}
	op := &Operation{ID: newID(), Catalog: name, State: OpQueued, Created: time.Now()}
	op.addReason(reason)
	st.notBefore = time.Now().Add(e.settle)
	e.ops[op.ID] = op
	// An explicit trigger supersedes a planned retry: run now.
	if st.retry != nil {
		st.retry.Stop()
		st.retry, st.nextRetry = nil, time.Time{}
	}
	st.queued = op
	if st.running == nil {
		e.startLocked(c, st)
	}
	return *op, nil
}

func (e *Engine) state(name string) *catalogState {
	st := e.states[name]
	if st == nil {
		st = &catalogState{}
		e.states[name] = st
	}
	return st
}

// startLocked starts the queued operation once it has settled: until
// then it stays queued, so further triggers join it.
func (e *Engine) startLocked(c catalogspec.Catalog, st *catalogState) {
	op := st.queued
	ctx := e.ctx
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			e.mu.Lock()
			wait := time.Until(st.notBefore)
			if wait <= 0 || ctx.Err() != nil {
				st.queued, st.running = nil, op
				e.mu.Unlock()
				break
			}
			e.mu.Unlock()
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		e.run(ctx, c, op)
	}()
}

func (e *Engine) run(ctx context.Context, c catalogspec.Catalog, op *Operation) {
	if e.storeCheck != nil {
		if err := e.storeCheck(); err != nil {
			e.finish(c, op, pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonStorage, Err: err})
			return
		}
	}
	// The sync lease first, so that this replica alone reports the
	// catalog while it waits for a slot and the registry's rate.
	ctx, release, err := e.pl.HoldLease(ctx, c.Name, e.observers)
	if err != nil {
		se, ok := pipeline.AsError(err)
		if !ok {
			se = &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonInternal, Retryable: true, Err: err}
		}
		e.finish(c, op, pipeline.Result{}, se)
		return
	}
	defer release()
	// Wait for a slot and the registry's rate while staying "Queued" to
	// the outside; the operation cannot be lost while it waits.
	if err := e.waitSlot(ctx, c); err != nil {
		e.finish(c, op, pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonCanceled, Retryable: true, Err: err})
		return
	}
	defer func() { <-e.slots }()
	if err := e.waitRate(ctx, c); err != nil {
		e.finish(c, op, pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonCanceled, Retryable: true, Err: err})
		return
	}
	e.mu.Lock()
	op.State, op.Started = OpRunning, e.now()
	e.mu.Unlock()

	track := pipeline.ObserverFunc(func(ev pipeline.Event) {
		e.mu.Lock()
		if op.State == OpRunning {
			ev := ev
			op.Progress = &ev
		}
		e.mu.Unlock()
	})
	res, err := e.pl.Run(ctx, c, append([]pipeline.Observer{track}, e.observers...)...)
	se, _ := pipeline.AsError(err)
	if err != nil && se == nil {
		se = &pipeline.Error{Phase: pipeline.PhaseFailed, Reason: pipeline.ReasonInternal, Retryable: true, Err: err}
	}
	e.finish(c, op, res, se)
}

// finish records the outcome, plans a retry for a retryable failure, and
// starts the queued operation if one arrived meanwhile.
func (e *Engine) finish(c catalogspec.Catalog, op *Operation, res pipeline.Result, se *pipeline.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.state(c.Name)
	op.Finished = e.now()
	if se != nil {
		op.State, op.Error = OpFailed, boundedError(se)
		st.failures++
	} else {
		r := res
		op.State, op.Result = OpSucceeded, &r
		st.failures = 0
	}
	st.running, st.last = nil, op
	e.finished = append(e.finished, op.ID)
	for len(e.finished) > e.history {
		delete(e.ops, e.finished[0])
		e.finished = e.finished[1:]
	}
	if e.ctx.Err() != nil {
		return
	}
	if st.queued != nil {
		// Someone asked again while this ran: go again at once; it
		// resolves the newest digest.
		if cur, ok := e.lookup(c.Name); ok {
			e.startLocked(cur, st)
		} else {
			q := st.queued
			st.queued = nil
			q.State, q.Finished = OpFailed, e.now()
			q.Error = &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonInvalidRef, Err: fmt.Errorf("%w %q: removed while queued", ErrUnknownCatalog, c.Name)}
		}
		return
	}
	if se != nil && se.Retryable {
		e.retryLocked(c.Name, st, se)
	}
}

// retryLocked plans the catalog's next attempt after a retryable failure:
// after the backoff for its failure count (its cap for a failure that asks
// for it), and never before the registry's Retry-After.
func (e *Engine) retryLocked(name string, st *catalogState, se *pipeline.Error) {
	d := e.backoff.Delay(st.failures-1, se.RetryAfter)
	if se.BackoffToCap() {
		d = e.backoff.AtCap(se.RetryAfter)
	}
	st.nextRetry = e.now().Add(d)
	st.retry = time.AfterFunc(d, func() {
		e.mu.Lock()
		st.retry, st.nextRetry = nil, time.Time{}
		e.mu.Unlock()
		if _, err := e.Trigger(e.ctx, name, "retry"); err != nil {
			e.log.Debug("retry dropped", "catalog", name, "err", err)
		}
	})
}

// limiter returns the start-rate limiter of the image's registry.
func (e *Engine) limiter(image catalogspec.Image) *rate.Limiter {
	host := rateHost(image)
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.limiters[host]
	if l == nil {
		l = rate.NewLimiter(e.regRate, e.regBurst)
		e.limiters[host] = l
	}
	return l
}

// Due reports whether c should be polled now: never synced, or its poll
// interval has passed since the last poll recorded in storage (so any
// replica, or a fresh process, agrees). Digest-pinned catalogs are due only
// until they are published.
func (e *Engine) Due(ctx context.Context, c catalogspec.Catalog) (bool, error) {
	ptr, _, err := catalog.Current(ctx, e.store, c.Name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return true, nil
	case err != nil:
		return false, err
	}
	if ptr.Ref != c.Image.String() {
		return true, nil // the spec changed: sync the new image
	}
	if c.Image.Pinned() || c.PollInterval <= 0 {
		return false, nil
	}
	last, err := catalog.LastPoll(ctx, e.store, c.Name)
	if errors.Is(err, storage.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return e.now().Sub(last.Time) >= c.PollInterval, nil
}

// PollDue triggers every catalog that is due (see Due) and returns their
// names. It is what a PingSource event, a CronJob or serve's own ticker
// calls.
func (e *Engine) PollDue(ctx context.Context) ([]string, error) {
	var due []string
	var errs []error
	for _, c := range e.set.Catalogs() {
		ok, err := e.Due(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
			continue
		}
		if !ok {
			continue
		}
		if _, err := e.Trigger(ctx, c.Name, "poll"); err != nil {
			errs = append(errs, err)
			continue
		}
		due = append(due, c.Name)
	}
	return due, errors.Join(errs...)
}

// RunScheduler polls due catalogs every interval (with jitter) until ctx
// ends: the cron fallback for registries that send no webhooks.
func (e *Engine) RunScheduler(ctx context.Context, every time.Duration) {
	for {
		if due, err := e.PollDue(ctx); err != nil {
			e.log.Warn("poll", "err", err)
		} else if len(due) > 0 {
			e.log.Debug("polling", "catalogs", due)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Jitter(every)):
		}
	}
}

// RetryFailed triggers every catalog whose last sync failed and that is
// not already queued or running, and returns their names: what to do when
// the cause of failures that are not retried (a store refusing writes)
// has gone.
func (e *Engine) RetryFailed(ctx context.Context, reason string) []string {
	var names []string
	for _, c := range e.set.Catalogs() {
		e.mu.Lock()
		st := e.states[c.Name]
		failed := st != nil && st.failures > 0 && st.running == nil && st.queued == nil
		e.mu.Unlock()
		if !failed {
			continue
		}
		if _, err := e.Trigger(ctx, c.Name, reason); err == nil {
			names = append(names, c.Name)
		}
	}
	return names
}

// State returns what the engine knows of a catalog.
func (e *Engine) State(name string) (CatalogState, bool) {
	c, ok := e.lookup(name)
	if !ok {
		return CatalogState{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.state(name)
	cs := CatalogState{Catalog: c, NextRetry: st.nextRetry, Failures: st.failures}
	cs.Running, cs.Queued, cs.Last = copyOp(st.running), copyOp(st.queued), copyOp(st.last)
	return cs, true
}

// Operation returns an operation by id, while it is kept.
func (e *Engine) Operation(id string) (Operation, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	op, ok := e.ops[id]
	if !ok {
		return Operation{}, false
	}
	return *copyOp(op), true
}

func copyOp(op *Operation) *Operation {
	if op == nil {
		return nil
	}
	c := *op
	c.Reasons = slices.Clone(op.Reasons)
	return &c
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
