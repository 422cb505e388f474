package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// syncLog records when syncs start and end, and how many overlap.
type syncLog struct {
	mu       sync.Mutex
	starts   []time.Time
	terminal []pipeline.Event
}

func (l *syncLog) Observe(e pipeline.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case e.Phase == pipeline.PhaseResolving:
		l.starts = append(l.starts, e.Time)
	case e.Terminal():
		l.terminal = append(l.terminal, e)
	}
}

// maxParallel is how many syncs ran at once at most, from the events'
// own times: observers hear each sync on its own goroutine, so the order
// events arrive in says nothing.
func (l *syncLog) maxParallel() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	type edge struct {
		t     time.Time
		delta int
	}
	var edges []edge
	for _, t := range l.starts {
		edges = append(edges, edge{t, 1})
	}
	for _, e := range l.terminal {
		edges = append(edges, edge{e.Time, -1})
	}
	// At equal times an end comes before a start.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func (l *syncLog) counts() (starts, done int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.starts), len(l.terminal)
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tinyImage(t *testing.T) imagebuild.Image {
	return imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/tiny/configs"), "/configs")
}

func threePkgImage(t *testing.T) imagebuild.Image {
	return imagebuild.FromDir(filepath.Join(repoRoot(t), "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs")
}

// 1,000 triggers for one catalog within a second: every one is accepted at
// once, at most two syncs run (the one running and one queued), and the
// catalog ends on the newest digest pushed during the storm.
func TestEngineStormCoalesces(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("storm/c:v1", tinyImage(t))
	// Slow the registry so the storm arrives while the first sync runs.
	e.proxy.Inject(servers.Delay(300*time.Millisecond), 0, servers.ManifestHEAD)
	log := &syncLog{}
	eng := engine.New(e.pl, engine.StaticCatalogs{{Name: "storm", Image: catalogspec.ParseImage(ref)}}, e.store, engine.WithObservers(log))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); eng.Wait() }()
	eng.Start(ctx)

	var newest string
	var acks []time.Duration
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range 1000 {
		if i == 500 {
			_, newest = e.push("storm/c:v1", threePkgImage(t))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if _, err := eng.Trigger(ctx, "storm", "webhook"); err != nil {
				t.Error(err)
			}
			mu.Lock()
			acks = append(acks, time.Since(start))
			mu.Unlock()
		}()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	waitFor(t, "the syncs to finish", time.Minute, func() bool {
		st, _ := eng.State("storm")
		return st.Running == nil && st.Queued == nil && st.Last != nil
	})
	starts, _ := log.counts()
	if starts > 2 || starts < 1 {
		t.Fatalf("%d syncs ran for 1000 triggers, want at most 2", starts)
	}
	ptr, _, err := catalog.Current(ctx, e.store, "storm")
	if err != nil || ptr.Digest != newest {
		t.Fatalf("published %s, want the newest %s (%v)", ptr.Digest, newest, err)
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i] < acks[j] })
	t.Logf("1000 triggers, %d syncs, ack p50 %v p99 %v max %v", starts, acks[500], acks[990], acks[999])
}

// A failed sync is retried with backoff without any new trigger.
func TestEngineRetriesWithBackoff(t *testing.T) {
	e := newEnv(t)
	ref, digest := e.push("retry/c:v1", tinyImage(t))
	e.proxy.Inject(servers.Status(503), 0)
	log := &syncLog{}
	eng := engine.New(e.pl, engine.StaticCatalogs{{Name: "r", Image: catalogspec.ParseImage(ref)}}, e.store,
		engine.WithObservers(log), engine.WithBackoff(backoff.Backoff{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); eng.Wait() }()
	eng.Start(ctx)
	op, err := eng.Trigger(ctx, "r", "test")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two failed attempts", 30*time.Second, func() bool { _, done := log.counts(); return done >= 2 })
	st, _ := eng.State("r")
	if st.Failures < 2 || st.Last == nil || st.Last.Error == nil || !st.Last.Error.Retryable {
		t.Fatalf("state %+v", st)
	}
	if first, ok := eng.Operation(op.ID); !ok || first.State != engine.OpFailed || first.Error.Reason != pipeline.ReasonRegistry {
		t.Fatalf("first operation %+v", first)
	}
	e.proxy.Clear()
	waitFor(t, "a retry to succeed", 30*time.Second, func() bool {
		st, _ := eng.State("r")
		return st.Last != nil && st.Last.State == engine.OpSucceeded
	})
	st, _ = eng.State("r")
	if st.Failures != 0 || st.Last.Result.Digest != digest || !slices.Contains(st.Last.Reasons, "retry") {
		t.Fatalf("after recovery: %+v", st.Last)
	}
}

func TestEngineLimits(t *testing.T) {
	e := newEnv(t)
	var cats engine.StaticCatalogs
	for _, n := range []string{"a", "b", "c"} {
		ref, _ := e.push("limits/"+n+":v1", tinyImage(t))
		cats = append(cats, catalogspec.Catalog{Name: n, Image: catalogspec.ParseImage(ref)})
	}
	e.proxy.Inject(servers.Delay(100*time.Millisecond), 0, servers.ManifestHEAD)

	t.Run("concurrency cap", func(t *testing.T) {
		log := &syncLog{}
		eng := engine.New(e.pl, cats, e.store, engine.WithObservers(log), engine.WithMaxConcurrent(1))
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); eng.Wait() }()
		eng.Start(ctx)
		for _, c := range cats {
			eng.Trigger(ctx, c.Name, "test")
		}
		waitFor(t, "three syncs", 30*time.Second, func() bool { _, d := log.counts(); return d == 3 })
		if n := log.maxParallel(); n != 1 {
			t.Fatalf("%d syncs ran at once with a cap of 1", n)
		}
	})
	t.Run("registry rate", func(t *testing.T) {
		log := &syncLog{}
		eng := engine.New(e.pl, cats, e.store, engine.WithObservers(log), engine.WithRegistryRate(4, 1))
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); eng.Wait() }()
		eng.Start(ctx)
		for _, c := range cats {
			if op, err := eng.Trigger(ctx, c.Name, "test"); err != nil || op.State != engine.OpQueued {
				t.Fatalf("trigger: %+v %v", op, err)
			}
		}
		waitFor(t, "three syncs", 30*time.Second, func() bool { _, d := log.counts(); return d == 3 })
		log.mu.Lock()
		defer log.mu.Unlock()
		slices.SortFunc(log.starts, func(a, b time.Time) int { return a.Compare(b) })
		// Three starts at 4/s with a burst of 1 are spread over >= 0.5 s:
		// none was dropped, the later ones waited queued.
		if span := log.starts[2].Sub(log.starts[0]); span < 400*time.Millisecond {
			t.Fatalf("3 syncs started within %v at 4/s", span)
		}
	})
}

func TestEngineDueAndUnknown(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("due/c:v1", tinyImage(t))
	var now atomic.Pointer[time.Time]
	t0 := time.Now()
	now.Store(&t0)
	clock := func() time.Time { return *now.Load() }
	cats := engine.StaticCatalogs{
		{Name: "polled", Image: catalogspec.ParseImage(ref), PollInterval: 10 * time.Minute},
		{Name: "once", Image: catalogspec.ParseImage(ref)},
	}
	eng := engine.New(e.pl, cats, e.store, engine.WithClock(clock))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); eng.Wait() }()
	eng.Start(ctx)

	if _, err := eng.Trigger(ctx, "nope", "webhook"); !errors.Is(err, engine.ErrUnknownCatalog) {
		t.Fatalf("unknown catalog: %v", err)
	}
	due, err := eng.PollDue(ctx)
	if err != nil || len(due) != 2 {
		t.Fatalf("never synced: due %v, %v", due, err)
	}
	waitFor(t, "both published", 30*time.Second, func() bool {
		for _, c := range cats {
			if st, _ := eng.State(c.Name); st.Last == nil || st.Last.State != engine.OpSucceeded {
				return false
			}
		}
		return true
	})
	// The pipeline records polls with the real clock; the engine's clock
	// decides due-ness.
	if due, _ := eng.PollDue(ctx); len(due) != 0 {
		t.Fatalf("just synced, yet due: %v", due)
	}
	later := time.Now().Add(11 * time.Minute)
	now.Store(&later)
	if due, _ := eng.PollDue(ctx); !slices.Equal(due, []string{"polled"}) {
		t.Fatalf("after the interval: due %v, want [polled]", due)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}
