package chaos

import (
	"bufio"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/servers"
)

var (
	flagDuration = flag.Duration("chaos.duration", 60*time.Second, "how long the nemesis injects faults")
	flagSeed     = flag.Uint64("chaos.seed", 1, "seed of the fault schedule and the workload")
	flagHistory  = flag.String("chaos.history", "", "write the recorded history (JSON lines) to this file")
)

// TestPartitionsKeepInvariants runs the workload against three replicas
// while the nemesis partitions, pauses and kills them, then heals, waits
// for the cluster to settle and checks the history.
func TestPartitionsKeepInvariants(t *testing.T) {
	needNetns(t)
	seed := *flagSeed
	rec := newRecorder()
	c := newCluster(t, rec, servers.CatalogsyncBinary(t))
	w := newWorkload(c, seed)
	ctx, cancel := context.WithTimeout(context.Background(), *flagDuration+10*time.Minute)
	defer cancel()
	if err := w.createCatalogs(ctx); err != nil {
		t.Fatal(err)
	}
	w.settle(ctx, 2*time.Minute)
	netem := netemAvailable(c.tp)
	faults := schedule(seed, *flagDuration, netem)
	wctx, stopWork := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(wctx)
	}()
	start := time.Now()
	applied, err := (&nemesis{c: c}).run(ctx, faults)
	stopWork()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	report(t, c, w, seed, time.Since(start), applied, netem)
}

// settle waits, bounded, until every catalog serves its newest push, then
// records what each replica serves and what the status says.
func (w *workload) settle(ctx context.Context, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil && !w.settled(ctx) {
		sleep(ctx, time.Second)
	}
}

func (w *workload) settled(ctx context.Context) bool {
	for _, n := range catalogNames {
		w.mu.Lock()
		want := w.gens[n]
		w.mu.Unlock()
		u, err := w.c.dyn.Resource(status.GVR).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return false
		}
		s := statusOp(u, 0)
		if s.Serving != "True" || !w.isGen(n, s.Digest, want) {
			return false
		}
	}
	return true
}

func (w *workload) isGen(name, digest string, gen int) bool {
	for _, o := range w.rec.history() {
		if o.Kind == kPush && o.OK && o.Catalog == name && o.Digest == digest {
			return o.Gen == gen
		}
	}
	return false
}

// final records, after the last heal and the settling, the status and
// what each replica serves directly.
func (w *workload) final(ctx context.Context) {
	for _, n := range catalogNames {
		if u, err := w.c.dyn.Resource(status.GVR).Get(ctx, n, metav1.GetOptions{}); err == nil {
			w.rec.add(statusOp(u, w.rec.now()))
		}
		for _, r := range w.c.replicas {
			o := readAll(ctx, w.c.http, r.url, n, w.rec)
			o.Kind, o.Replica = kFinal, r.i
			w.rec.add(o)
		}
	}
}

// finish settles the cluster (for at most settleLimit), records the end
// state and the registry's pulls, saves the history and checks it.
func finish(t *testing.T, c *cluster, w *workload, settleLimit time.Duration) (found []anomaly, tolerated int, settled time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settleLimit+2*time.Minute)
	defer cancel()
	settleStart := time.Now()
	w.settle(ctx, settleLimit)
	settled = time.Since(settleStart)
	w.final(ctx)
	pulls, err := registryPulls(filepath.Join(c.dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pulls {
		c.rec.add(p)
	}
	path := *flagHistory
	if path == "" {
		path = filepath.Join(c.dir, "history.jsonl")
	}
	if err := c.rec.save(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("history: %s", path)
	found, tolerated = check(c.rec.history())
	return found, tolerated, settled
}

// report checks the run and logs its numbers; anomalies fail the test.
func report(t *testing.T, c *cluster, w *workload, seed uint64, ran time.Duration, faults int, netem bool) {
	t.Helper()
	found, tolerated, settled := finish(t, c, w, 3*time.Minute)
	counts := map[string]int{}
	for _, o := range c.rec.history() {
		if o.Kind == kFault {
			counts[o.Via]++
		}
	}
	t.Logf("seed %d: %s of faults (%d: %v; netem %v), %d operations, settled in %s, %d reads within the staleness bound, %d anomalies",
		seed, ran.Round(time.Second), faults, counts, netem, w.ops.Load(), settled.Round(time.Second), tolerated, len(found))
	for i, a := range found {
		if i == 30 {
			t.Errorf("… and %d more", len(found)-30)
			break
		}
		t.Error(a)
	}
	if t.Failed() {
		for _, r := range c.replicas {
			t.Logf("r%d log: %s", r.i, r.p.logPath)
		}
	}
}

// pullLine is a layer GET the registry answered with 200, in its text log.
var pullLine = regexp.MustCompile(`http\.request\.method=GET .*http\.request\.uri="/v2/[^"]+/blobs/(sha256:[0-9a-f]{64})".*http\.response\.status=200`)

// registryPulls reads the layer GETs from the registry's log.
func registryPulls(path string) ([]op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []op
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "response completed") {
			continue
		}
		if m := pullLine.FindStringSubmatch(line); m != nil {
			out = append(out, op{Kind: kPull, Layer: m[1], Replica: -1, OK: true})
		}
	}
	return out, sc.Err()
}
