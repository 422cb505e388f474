package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Unit tests: the engine over a fake Runner (no registry, no pipeline).

type leaseKey struct{}

// fakeRunner is an engine.Runner. Runs wait on block (when set); outcome
// says how each run ends; leases held by "another replica" (otherHolds)
// keep HoldLease waiting until their channel closes.
type fakeRunner struct {
	mu          sync.Mutex
	block       chan struct{}
	outcome     func(name string, n int) (pipeline.Result, error)
	otherHolds  map[string]chan struct{}
	leaseWaits  map[string]bool
	runs        map[string]int
	inFlight    int
	maxInFlight int
	unleased    []string // runs whose context carried no lease of ours
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{otherHolds: map[string]chan struct{}{}, leaseWaits: map[string]bool{}, runs: map[string]int{}}
}

func (f *fakeRunner) HoldLease(ctx context.Context, name string, obs []pipeline.Observer) (context.Context, func(), error) {
	f.mu.Lock()
	other := f.otherHolds[name]
	if other != nil {
		f.leaseWaits[name] = true
	}
	f.mu.Unlock()
	if other != nil {
		pipeline.NotifyWait(obs, pipeline.Wait{Catalog: name, Reason: pipeline.WaitLease, Holder: "other"})
		select {
		case <-other:
		case <-ctx.Done():
			return ctx, nil, ctx.Err()
		}
	}
	return context.WithValue(ctx, leaseKey{}, name), func() {}, nil
}

func (f *fakeRunner) Run(ctx context.Context, c catalogspec.Catalog, obs ...pipeline.Observer) (pipeline.Result, error) {
	f.mu.Lock()
	f.runs[c.Name]++
	n := f.runs[c.Name]
	if ctx.Value(leaseKey{}) != c.Name {
		f.unleased = append(f.unleased, c.Name)
	}
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	block := f.block
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return pipeline.Result{}, ctx.Err()
		}
	}
	if f.outcome != nil {
		return f.outcome(c.Name, n)
	}
	return pipeline.Result{Catalog: c.Name, Image: c.Image.String(), Action: pipeline.ActionPublished}, nil
}

func (f *fakeRunner) read(fn func(f *fakeRunner) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fn(f)
}

// waits counts the waits observers heard (not their ends), per reason.
type waits struct {
	mu   sync.Mutex
	seen map[pipeline.WaitReason][]pipeline.Wait
}

func (w *waits) Observe(pipeline.Event) {}

func (w *waits) ObserveWait(wt pipeline.Wait) {
	if wt.Over {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[pipeline.WaitReason][]pipeline.Wait{}
	}
	w.seen[wt.Reason] = append(w.seen[wt.Reason], wt)
}

func (w *waits) of(r pipeline.WaitReason) []pipeline.Wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen[r])
}

func unitStore(t *testing.T) storage.Store {
	t.Helper()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startEngine starts an engine (no settle time) that stops with the test.
func startEngine(t *testing.T, r engine.Runner, cats engine.StaticCatalogs, opts ...engine.Option) (*engine.Engine, context.Context) {
	t.Helper()
	eng := engine.New(r, cats, unitStore(t), append([]engine.Option{engine.WithSettle(0, 0)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); eng.Wait() })
	eng.Start(ctx)
	return eng, ctx
}

func idle(eng *engine.Engine, name string) func() bool {
	return func() bool {
		st, _ := eng.State(name)
		return st.Running == nil && st.Queued == nil && st.Last != nil
	}
}

// Triggers that arrive while a sync runs join one queued operation: 1,000
// of them make one more sync, not 1,000.
func TestUnitStormJoinsOneOperation(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.block = make(chan struct{})
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}})
	first, err := eng.Trigger(ctx, "c", "first")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first sync to run", time.Minute, func() bool { return r.read(func(f *fakeRunner) bool { return f.inFlight == 1 }) })
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {
			op, err := eng.Trigger(ctx, "c", "webhook")
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			ids[op.ID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 1 || ids[first.ID] {
		t.Fatalf("1000 triggers during a sync made %d operations (the running one among them: %v), want 1 queued", len(ids), ids[first.ID])
	}
	close(r.block)
	waitFor(t, "the syncs to end", time.Minute, idle(eng, "c"))
	if n := r.read(func(f *fakeRunner) bool { return f.runs["c"] == 2 }); !n {
		t.Fatalf("runs %v, want 2", r.runs)
	}
}

// A retryable failure is retried with backoff, without a new trigger, until
// it succeeds; a terminal one is not retried.
func TestUnitRetryWithBackoff(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.outcome = func(name string, n int) (pipeline.Result, error) {
		switch {
		case name == "bad":
			return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseValidating, Reason: pipeline.ReasonInvalidCatalog}
		case n <= 2:
			return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonRegistry, Retryable: true}
		}
		return pipeline.Result{Catalog: name, Action: pipeline.ActionPublished}, nil
	}
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}, {Name: "bad", Image: catalogspec.ParseImage("reg.test/bad:v1")}},
		engine.WithBackoff(backoff.Backoff{Min: time.Millisecond, Max: 4 * time.Millisecond}))
	op, _ := eng.Trigger(ctx, "c", "test")
	eng.Trigger(ctx, "bad", "test")
	waitFor(t, "a retry to succeed", time.Minute, func() bool {
		st, _ := eng.State("c")
		return st.Last != nil && st.Last.State == engine.OpSucceeded
	})
	st, _ := eng.State("c")
	if st.Failures != 0 || !slices.Equal(st.Last.Reasons, []string{"retry"}) || !r.read(func(f *fakeRunner) bool { return f.runs["c"] == 3 }) {
		t.Fatalf("after recovery: %+v, runs %v", st.Last, r.runs)
	}
	if first, ok := eng.Operation(op.ID); !ok || first.State != engine.OpFailed || first.Error.Reason != pipeline.ReasonRegistry {
		t.Fatalf("first operation %+v", first)
	}
	waitFor(t, "the terminal failure", time.Minute, idle(eng, "bad"))
	if st, _ := eng.State("bad"); st.Last.State != engine.OpFailed || !st.NextRetry.IsZero() || st.Failures != 1 {
		t.Fatalf("terminal failure: %+v, next retry %v", st.Last, st.NextRetry)
	}
}

// A registry's Retry-After is honoured: the retry waits at least that long
// however short the backoff.
func TestUnitRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.outcome = func(string, int) (pipeline.Result, error) {
		return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonRegistry, Retryable: true, RetryAfter: time.Hour}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}},
		engine.WithBackoff(backoff.Backoff{Min: time.Millisecond, Max: time.Millisecond}), engine.WithClock(func() time.Time { return t0 }))
	eng.Trigger(ctx, "c", "test")
	waitFor(t, "the failure", time.Minute, idle(eng, "c"))
	if st, _ := eng.State("c"); st.NextRetry.Before(t0.Add(time.Hour)) {
		t.Fatalf("next retry at %v, want at least an hour after %v", st.NextRetry, t0)
	}
}

// At most WithMaxConcurrent syncs run at once; the others wait for a slot
// (and say so) without being lost.
func TestUnitMaxConcurrency(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.block = make(chan struct{})
	var cats engine.StaticCatalogs
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		cats = append(cats, catalogspec.Catalog{Name: n, Image: catalogspec.ParseImage("reg.test/" + n + ":v1")})
	}
	w := &waits{}
	eng, ctx := startEngine(t, r, cats, engine.WithMaxConcurrent(2), engine.WithObservers(w))
	for _, c := range cats {
		eng.Trigger(ctx, c.Name, "test")
	}
	waitFor(t, "every sync to run or wait for a slot", time.Minute, func() bool {
		return r.read(func(f *fakeRunner) bool { return f.inFlight+len(w.of(pipeline.WaitSlot)) >= len(cats) })
	})
	if !r.read(func(f *fakeRunner) bool { return f.maxInFlight == 2 }) {
		t.Fatalf("%d syncs ran at once with a cap of 2", r.maxInFlight)
	}
	close(r.block)
	for _, c := range cats {
		waitFor(t, c.Name+" to sync", time.Minute, idle(eng, c.Name))
	}
	if !r.read(func(f *fakeRunner) bool { return f.maxInFlight == 2 && len(f.runs) == len(cats) }) {
		t.Fatalf("runs %v, at most %d at once", r.runs, r.maxInFlight)
	}
}

// The start rate is limited per registry: a second sync against a registry
// whose budget is spent waits (and says so), one against another registry
// does not.
func TestUnitRegistryRate(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	w := &waits{}
	cats := engine.StaticCatalogs{{Name: "a", Image: catalogspec.ParseImage("one.test/a:v1")}, {Name: "b", Image: catalogspec.ParseImage("one.test/b:v1")}, {Name: "c", Image: catalogspec.ParseImage("two.test/c:v1")}}
	eng, ctx := startEngine(t, r, cats, engine.WithRegistryRate(1.0/3600, 1), engine.WithObservers(w))
	for _, c := range cats {
		eng.Trigger(ctx, c.Name, "test")
	}
	waitFor(t, "one sync per registry and a wait for one.test", time.Minute, func() bool {
		waited := w.of(pipeline.WaitRate)
		return r.read(func(f *fakeRunner) bool { return f.runs["a"]+f.runs["b"] == 1 && f.runs["c"] == 1 }) &&
			len(waited) == 1 && waited[0].Detail == "one.test"
	})
	waiting := waitingOn(w.of(pipeline.WaitRate)[0].Catalog, eng)
	if waiting == nil || waiting.State != engine.OpQueued {
		t.Fatalf("the rate-limited sync is %+v, want queued", waiting)
	}
}

func waitingOn(name string, eng *engine.Engine) *engine.Operation {
	st, _ := eng.State(name)
	return st.Running
}

// While another replica holds a catalog's lease the engine runs nothing for
// it, and the wait takes no sync slot from other catalogs.
func TestUnitLeaseHeldElsewhere(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	other := make(chan struct{})
	r.otherHolds["c"] = other
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}, {Name: "d", Image: catalogspec.ParseImage("reg.test/d:v1")}},
		engine.WithMaxConcurrent(1))
	eng.Trigger(ctx, "c", "test")
	waitFor(t, "the engine to wait for the lease", time.Minute, func() bool { return r.read(func(f *fakeRunner) bool { return f.leaseWaits["c"] }) })
	eng.Trigger(ctx, "d", "test")
	waitFor(t, "d to sync while c waits", time.Minute, idle(eng, "d"))
	if r.read(func(f *fakeRunner) bool { return f.runs["c"] != 0 }) {
		t.Fatal("c ran while another replica held its lease")
	}
	close(other)
	waitFor(t, "c to sync", time.Minute, idle(eng, "c"))
	if !r.read(func(f *fakeRunner) bool { return f.runs["c"] == 1 && len(f.unleased) == 0 }) {
		t.Fatalf("runs %v; runs without the lease: %v", r.runs, r.unleased)
	}
}

// publish stores content for name at digest and points name at it, with
// its last poll at t.
func publish(t *testing.T, st storage.Store, name, ref, digest string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	w, err := catalog.NewWriter(ctx, st, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("olm.package", "", "p", []byte(`{"schema":"olm.package","name":"p"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, catalog.Meta{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(ctx, st, name, catalog.Pointer{Digest: digest, Ref: ref, ResolvedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.RecordPoll(ctx, st, name, catalog.Poll{Time: at, Ref: ref, Digest: digest}); err != nil {
		t.Fatal(err)
	}
}

// Due reads storage: never synced, a changed image, or a poll interval
// passed since the last poll make a catalog due; a pinned or unpolled one
// that is published is not. PollDue triggers exactly the due ones.
func TestUnitDueAndPollDue(t *testing.T) {
	t.Parallel()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	st := unitStore(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cats := engine.StaticCatalogs{
		{Name: "new", Image: catalogspec.ParseImage("reg.test/new:v1"), PollInterval: time.Minute},
		{Name: "changed", Image: catalogspec.ParseImage("reg.test/changed:v2")},
		{Name: "pinned", Image: catalogspec.ParseImage("reg.test/pinned@" + digest), PollInterval: time.Minute},
		{Name: "unpolled", Image: catalogspec.ParseImage("reg.test/unpolled:v1")},
		{Name: "polled", Image: catalogspec.ParseImage("reg.test/polled:v1"), PollInterval: 10 * time.Minute},
		// Due after ones that are not: the poll goes on past them.
		{Name: "last", Image: catalogspec.ParseImage("reg.test/last:v1")},
	}
	publish(t, st, "changed", "reg.test/changed:v1", digest, t0)
	for _, c := range cats[2:5] {
		publish(t, st, c.Name, c.Image.String(), digest, t0)
	}
	now := t0.Add(5 * time.Minute)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// A long settle keeps triggered syncs queued: only Due is under test.
	eng := engine.New(newFakeRunner(), cats, st, engine.WithClock(clock), engine.WithSettle(time.Hour, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); eng.Wait() }()
	eng.Start(ctx)

	due, err := eng.PollDue(ctx)
	if err != nil || !slices.Equal(due, []string{"new", "changed", "last"}) {
		t.Fatalf("5 minutes after the last poll: due %v (%v), want [new changed last]", due, err)
	}
	for _, name := range due {
		if s, _ := eng.State(name); s.Queued == nil {
			t.Fatalf("%s is due but not queued", name)
		}
	}
	mu.Lock()
	now = t0.Add(10 * time.Minute)
	mu.Unlock()
	if ok, err := eng.Due(ctx, cats[4]); err != nil || !ok {
		t.Fatalf("polled, at its interval: due %v (%v)", ok, err)
	}
	if ok, err := eng.Due(ctx, cats[2]); err != nil || ok {
		t.Fatalf("pinned and published: due %v (%v)", ok, err)
	}
	if _, err := eng.Trigger(ctx, "nope", "test"); !errors.Is(err, engine.ErrUnknownCatalog) {
		t.Fatalf("unknown catalog: %v", err)
	}
}

// The operation history keeps exactly the last n finished operations.
func TestUnitHistoryKeepsN(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}}, engine.WithHistory(2))
	var ids []string
	for range 3 {
		op, err := eng.Trigger(ctx, "c", "test")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, op.ID)
		waitFor(t, "the sync to end", time.Minute, func() bool { o, ok := eng.Operation(op.ID); return ok && o.State == engine.OpSucceeded })
	}
	for i, id := range ids {
		if _, ok := eng.Operation(id); ok != (i > 0) {
			t.Errorf("operation %d kept: %v, want the last 2 kept", i+1, ok)
		}
	}
}

// The first retry waits the backoff's minimum (±20% jitter), not more.
func TestUnitFirstRetryAfterMinimum(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.outcome = func(string, int) (pipeline.Result, error) {
		return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonRegistry, Retryable: true}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}},
		engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: 100 * time.Hour}), engine.WithClock(func() time.Time { return t0 }))
	eng.Trigger(ctx, "c", "test")
	waitFor(t, "the failure", time.Minute, idle(eng, "c"))
	if st, _ := eng.State("c"); st.NextRetry.Before(t0.Add(48*time.Minute)) || st.NextRetry.After(t0.Add(72*time.Minute)) {
		t.Fatalf("first retry at %v, want an hour (±20%%) after %v", st.NextRetry, t0)
	}
}

// A refused login is retried at the backoff's cap from the first failure;
// a success clears the failures, so a blip after it waits the minimum.
func TestUnitAuthFailureRetriesAtCap(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	r.outcome = func(_ string, n int) (pipeline.Result, error) {
		switch n {
		case 1:
			return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonAuth, Retryable: true}
		case 2:
			return pipeline.Result{}, nil
		}
		return pipeline.Result{}, &pipeline.Error{Phase: pipeline.PhaseResolving, Reason: pipeline.ReasonRegistry, Retryable: true}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}},
		engine.WithBackoff(backoff.Backoff{Min: time.Minute, Max: 100 * time.Hour}), engine.WithClock(func() time.Time { return t0 }))
	next := func(what string) time.Time {
		eng.Trigger(ctx, "c", what)
		waitFor(t, what, time.Minute, func() bool {
			st, _ := eng.State("c")
			return st.Running == nil && st.Queued == nil && st.Last != nil && slices.Contains(st.Last.Reasons, what)
		})
		st, _ := eng.State("c")
		return st.NextRetry
	}
	if at := next("auth"); at.Before(t0.Add(80*time.Hour)) || at.After(t0.Add(120*time.Hour)) {
		t.Fatalf("after a refused login: retry at %v, want the cap (100h ±20%%) after %v", at, t0)
	}
	if at := next("success"); !at.IsZero() {
		t.Fatalf("after a success: retry planned at %v", at)
	}
	if at := next("blip"); at.Before(t0.Add(48*time.Second)) || at.After(t0.Add(72*time.Second)) {
		t.Fatalf("a blip after the success: retry at %v, want the minimum after %v", at, t0)
	}
}
