package chaos

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// TestPausedPublisherMeetsTheCAS pauses the replica syncing a push in the
// middle of its upload for longer than a lease term, lets another replica
// publish a newer push meanwhile, and resumes the first with its lease
// renewals held back, so nothing but the pointer's compare-and-swap stands
// between its stale publish and the store. The service as built keeps every
// invariant; built with the planted bug (tag chaos_nocas: publish without
// the CAS, and a lease that no longer gives itself up on its own clock,
// which would stop the resumed replica first) the checker names the stale
// pointer write and the status it moved back.
func TestPausedPublisherMeetsTheCAS(t *testing.T) {
	needNetns(t)
	t.Run("as built", func(t *testing.T) {
		found := pausedPublisher(t, servers.CatalogsyncBinary(t))
		for _, a := range found {
			t.Error(a)
		}
	})
	t.Run("publish without the CAS", func(t *testing.T) {
		found := pausedPublisher(t, plantedBinary(t))
		byInv := map[int]int{}
		for _, a := range found {
			byInv[a.Invariant]++
			t.Logf("found as planted: %s", a)
		}
		// The stale pointer write itself (7) and the status it moved
		// back (3); readers and the final state may or may not have
		// seen it before another sync moved the pointer on.
		for _, inv := range []int{3, 7} {
			if byInv[inv] == 0 {
				t.Errorf("the checker found no anomaly of invariant %d in a run with the planted bug", inv)
			}
		}
	})
}

// plantedBinary builds catalogsync with the chaos_nocas tag.
func plantedBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalogsync-nocas")
	cmd := exec.Command("go", "build", "-tags", "chaos_nocas", "-o", p, "./cmd/catalogsync")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags chaos_nocas: %v\n%s", err, out)
	}
	return p
}

func pausedPublisher(t *testing.T, bin string) []anomaly {
	rec := newRecorder()
	c := newCluster(t, rec, bin)
	w := newWorkload(c, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := w.createCatalogs(ctx); err != nil {
		t.Fatal(err)
	}
	w.settle(ctx, 2*time.Minute)
	octx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w.observe(octx, &wg)

	const cat = "alpha"
	content := func(m, k string) bool {
		return m == http.MethodPut && strings.HasPrefix(k, "catalogs/"+cat+"/sha256-")
	}
	arrived := make([]<-chan struct{}, len(c.stores))
	release := make([]func(), len(c.stores))
	for i, sp := range c.stores {
		arrived[i], release[i] = sp.holdBack(content)
	}
	if err := w.push(ctx, cat); err != nil {
		t.Fatal(err)
	}
	a := -1
	select {
	case <-arrived[0]:
		a = 0
	case <-arrived[1]:
		a = 1
	case <-arrived[2]:
		a = 2
	case <-time.After(90 * time.Second):
		t.Fatal("no replica started uploading the push")
	}
	pa := c.replicas[a]
	pausedAt := rec.now()
	if !pa.p.signal(syscall.SIGSTOP) {
		t.Fatal("cannot pause the uploading replica")
	}
	for i := range release {
		if i != a {
			release[i]()
		}
	}
	t.Logf("r%d paused in its upload", a)
	if err := w.push(ctx, cat); err != nil {
		t.Fatal(err)
	}
	w.send(ctx, cat, (a+1)%3, "rest", 0)
	// Another replica takes the lapsed lease and publishes the newer push.
	newest := w.latest(cat)
	deadline := time.Now().Add(2 * time.Minute)
	for !w.serves(ctx, cat, newest) {
		if time.Now().After(deadline) {
			t.Fatalf("no other replica published generation %d while r%d was paused", newest, a)
		}
		sleep(ctx, 500*time.Millisecond)
	}
	sleep(ctx, leaseTerm-(rec.now()-pausedAt)) // at least a lease term paused
	_, releaseLease := c.stores[a].holdBack(func(m, k string) bool {
		return m == http.MethodPut && k == "catalogs/"+cat+"/syncing"
	})
	logFrom := logSize(pa.p.logPath)
	release[a]()
	pa.p.signal(syscall.SIGCONT)
	rec.add(op{Kind: kFault, Start: pausedAt, End: rec.now(), Replica: a, Via: fPause, OK: true, StoreCut: true})
	t.Logf("r%d resumed with its lease renewals held back", a)
	// Its renewals stay held until its sync has ended: either it gave up
	// (as built), or its stale publish reached the status (planted). A
	// renewal let through earlier fails its own compare-and-swap, and the
	// lost lease would cancel the status write the planted run must show.
	deadline = time.Now().Add(time.Minute)
	for !w.statusWentBack(cat, newest) && !logSays(pa.p.logPath, logFrom, "newer resolution already published", "sync failed") {
		if time.Now().After(deadline) {
			t.Logf("r%d's sync had not ended a minute after it resumed", a)
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}
	releaseLease()
	sleep(ctx, 5*time.Second) // readers and the watch see what followed
	stop()
	wg.Wait()
	found, _, _ := finish(t, c, w, 20*time.Second)
	return found
}

// observe runs the readers and the status watch until ctx ends.
func (w *workload) observe(ctx context.Context, wg *sync.WaitGroup) {
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.seed, uint64(10+i)))
			for ctx.Err() == nil {
				w.read(ctx, rng)
				sleep(ctx, 200*time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watch(ctx)
	}()
}

func (w *workload) latest(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gens[name]
}

// serves tells whether the status says name serves generation gen.
func (w *workload) serves(ctx context.Context, name string, gen int) bool {
	for _, o := range w.rec.history() {
		if o.Kind == kStatus && o.Catalog == name && o.Serving == "True" && w.isGen(name, o.Digest, gen) {
			return true
		}
	}
	return false
}

// statusWentBack tells whether the watch saw name's status name an older
// generation after it served gen.
func (w *workload) statusWentBack(name string, gen int) bool {
	var ss []op
	for _, o := range w.rec.history() {
		if o.Kind == kStatus && o.Catalog == name {
			ss = append(ss, o)
		}
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].RV < ss[j].RV })
	served := false
	for _, s := range ss {
		switch {
		case s.Serving == "True" && w.isGen(name, s.Digest, gen):
			served = true
		case served && s.Digest != "" && !w.isGen(name, s.Digest, gen):
			return true
		}
	}
	return false
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSays tells whether the log at path says any of the strings after
// offset from.
func logSays(path string, from int64, any ...string) bool {
	b, _ := os.ReadFile(path)
	if int64(len(b)) < from {
		return false
	}
	b = b[from:]
	for _, s := range any {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
