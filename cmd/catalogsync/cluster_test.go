package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// countingStore counts the operations replicas make on a shared real
// store, by kind.
type countingStore struct {
	storage.Store
	mu  sync.Mutex
	ops map[string]int
}

func (c *countingStore) count(op, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	area := "catalogs"
	if strings.HasPrefix(key, "leases/") {
		area = "leases"
	}
	c.ops[op+" "+area]++
}

func (c *countingStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	c.count("stat", key)
	return c.Store.Stat(ctx, key)
}

func (c *countingStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.count("get", key)
	return c.Store.Get(ctx, key, off, n)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	c.count("list", prefix)
	return c.Store.List(ctx, prefix)
}

func (c *countingStore) PutIf(ctx context.Context, key string, b []byte, ifMatch string) (storage.Info, error) {
	c.count("putif", key)
	return c.Store.PutIf(ctx, key, b, ifMatch)
}

type countingPoller struct{ n atomic.Int64 }

func (p *countingPoller) PollDue(context.Context) ([]string, error) {
	p.n.Add(1)
	return nil, nil
}

// Three replicas on one store: the poll check and the GC pass run once
// per interval between them (turns in the store), not three times; only
// at its start does each replica check without the turn.
func TestClusterJobsOncePerInterval(t *testing.T) {
	t.Parallel()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st, ops: map[string]int{}}
	const every = 200 * time.Millisecond
	log := slog.New(slog.DiscardHandler)
	var polls countingPoller
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 3 {
		h := clusterHolder("replica-" + string(rune('a'+i)))
		wg.Go(func() { runPoller(ctx, log, &polls, cs, h, every) })
		wg.Go(func() {
			runGC(ctx, log, cs, h, func() ([]string, bool) { return []string{}, true }, every, catalog.GCOptions{})
		})
	}
	time.Sleep(15 * every)
	cancel()
	wg.Wait()
	elapsed := time.Since(start)

	// Turns last 0.95 interval: at most this many fit in the run.
	most := int(elapsed/(every*95/100)) + 1
	gcPasses := cs.ops["list catalogs"]
	t.Logf("%v with 3 replicas every %v: %d poll checks, %d GC passes (at most %d each); store ops %v",
		elapsed.Round(time.Millisecond), every, polls.n.Load(), gcPasses, most, cs.ops)
	if n := int(polls.n.Load()); n < 3 || n > most+2 {
		t.Errorf("%d poll checks, want 3..%d (once per interval, not once per replica, and each replica's start)", n, most+2)
	}
	if gcPasses < 1 || gcPasses > most {
		t.Errorf("%d GC passes, want 1..%d (once per interval, not once per replica)", gcPasses, most)
	}
}
