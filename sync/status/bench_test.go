package status

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// sharedCommunityEnv points the benchmarks at the shared community-v4.21
// catalog somewhere else (an absolute path: a test runs in its package's
// folder); bench/run.sh documents it.
const sharedCommunityEnv = "CATALOGSYNC_BENCH_COMMUNITY"

// sharedCommunity returns the folder of the full community catalog (745
// bundles) from the workplace's shared test data beside the repository,
// and, when it is absent (a user's clone), the message to skip with.
func sharedCommunity() (dir, missing string) {
	dir = filepath.Join("..", "..", "..", "shared", "testdata", "fbc", "community-v4.21", "configs")
	where := "../shared/testdata/fbc/community-v4.21 beside the repository"
	if d := os.Getenv(sharedCommunityEnv); d != "" {
		dir, where = d, d+" ("+sharedCommunityEnv+")"
	}
	if _, err := os.Stat(dir); err != nil {
		return dir, "needs the shared community-v4.21 catalog, the workplace's test data that a user's clone lacks: " + where + " not found"
	}
	return dir, ""
}

var benchSeq atomic.Int64

// statusBench is what the status benchmarks run against: a real
// kube-apiserver with the CRD, a real registry, and the service part in
// this process (the ClusterCatalogs informer, the status Writer and the sync
// pipeline into a local store), which syncs the catalogs named bench-*
// with an event log observing, so the pipeline's own event times are
// known.
type statusBench struct {
	c      *cluster
	r      *registry
	s      *service
	events *eventLog
}

func startStatusBench(b *testing.B) *statusBench {
	b.Helper()
	sb := &statusBench{c: startCluster(b), r: startRegistry(b), events: &eventLog{}}
	sb.s = newService(b, sb.c, sb.r, func(n string) bool { return strings.HasPrefix(n, "bench-") }, sb.events)
	return sb
}

// BenchmarkStatusLatency measures how soon a ClusterCatalog's status shows
// what a sync is doing (bench/run.sh runs it for docs/benchmarks.md). Each
// iteration creates a ClusterCatalog and waits until a watch shows it
// Succeeded and Serving. It reports per catalog:
//
//   - applies/sync: status applies the Writer made per sync;
//   - versions/sync: object versions a watch saw after creation (the
//     label, then each status write);
//   - shown/sync: distinct phases (layers count apart) that appeared in
//     the watch, of phases/sync the sync went through;
//   - sync-ms: from the sync's first event to its last;
//   - lat-mean-ms, lat-max-ms (of samples): from the pipeline's event of a
//     phase (or layer) change to the first watch event showing that phase
//     or a later one.
//
// The baseline, write-watch-floor, is the apiserver alone in the same run:
// from sending a merge patch to the watch event carrying it.
func BenchmarkStatusLatency(b *testing.B) {
	sb := startStatusBench(b)
	b.Run("write-watch-floor", sb.writeWatchFloor)
	shared, missing := sharedCommunity()
	sets := []struct{ name, dir, missing string }{
		{"tiny", testdataDir("tiny"), ""},
		{"community-v4.21-3pkgs", testdataDir("community-v4.21-3pkgs"), ""},
		{"community-v4.21", shared, missing},
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			if set.missing != "" {
				b.Skip(set.missing)
			}
			sb.syncs(b, set.name, set.dir, 0)
		})
	}
}

// BenchmarkStatusThrottled is BenchmarkStatusLatency's measure of a sync
// whose layer's bytes move for 5 s: applies stay at about one a second.
func BenchmarkStatusThrottled(b *testing.B) {
	sb := startStatusBench(b)
	b.Run("community-v4.21-3pkgs-5s-pull", func(b *testing.B) {
		sb.syncs(b, "community-v4.21-3pkgs-5s-pull", testdataDir("community-v4.21-3pkgs"), 5*time.Second)
	})
}

// writeWatchFloor measures the apiserver's write→watch latency: ten merge
// patches of an annotation per iteration, each timed from sending it to
// the watch event carrying it. The catalog is not one the service syncs.
func (sb *statusBench) writeWatchFloor(b *testing.B) {
	name := "floor-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sb.c.create(b, name, sb.r.proxy.Host+"/bench/none:v1")
	rec := record(b, sb.c, name)
	rec.wait(2*time.Minute, "created", func(seen) bool { return true })
	var lats []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range 10 {
			val := fmt.Sprintf("%d-%d", i, j)
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench/seq":%q}}}`, val)
			start := time.Now()
			if _, err := sb.c.res.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
			v, _ := rec.wait(2*time.Minute, "annotation "+val, func(v seen) bool { return v.annotations["bench/seq"] == val })
			lats = append(lats, v.at.Sub(start))
		}
	}
	b.StopTimer()
	reportLatencies(b, lats)
}

// syncs pushes the catalog in dir as set's image and, per iteration,
// creates a ClusterCatalog of it and waits until a watch shows it
// Succeeded and Serving. pull > 0 throttles the layer to last about that
// long.
func (sb *statusBench) syncs(b *testing.B, set, dir string, pull time.Duration) {
	img := imagebuild.FromDir(dir, "/configs")
	ref, _ := sb.r.push("bench/status-"+set+":v1", img)
	if pull > 0 {
		sb.r.proxy.Inject(servers.Throttle(max(layerSize(b, img)*int64(time.Second)/int64(pull), 1)), 0, servers.BlobGET)
		defer sb.r.proxy.Clear()
	}
	var lats []time.Duration
	var versions, shown, phases int
	var syncTime time.Duration
	applies0 := sb.s.settledApplies()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := "bench-" + strconv.FormatInt(benchSeq.Add(1), 10)
		rec := record(b, sb.c, name)
		sb.c.create(b, name, ref)
		rec.wait(2*time.Minute, "Succeeded and Serving", func(v seen) bool {
			return v.cond(TypeServing).Status == metav1.ConditionTrue &&
				strings.HasPrefix(v.cond(TypeProgressing).Message, "Published ")
		})
		vs := rec.versions()
		versions += len(vs) - 1 // the first is the creation
		evs := sb.events.of(name)
		l, sh, ph := phaseLatencies(evs, vs)
		lats = append(lats, l...)
		shown += sh
		phases += ph
		if len(evs) > 0 {
			syncTime += evs[len(evs)-1].Time.Sub(evs[0].Time)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(sb.s.settledApplies()-applies0)/n, "applies/sync")
	b.ReportMetric(float64(versions)/n, "versions/sync")
	b.ReportMetric(float64(shown)/n, "shown/sync")
	b.ReportMetric(float64(phases)/n, "phases/sync")
	b.ReportMetric(ms(syncTime)/n, "sync-ms")
	reportLatencies(b, lats)
}

// reportLatencies reports the mean and the maximum of lats, and how many
// there were.
func reportLatencies(b *testing.B, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range lats {
		sum += d
	}
	b.ReportMetric(ms(sum)/float64(len(lats)), "lat-mean-ms")
	b.ReportMetric(ms(slices.Max(lats)), "lat-max-ms")
	b.ReportMetric(float64(len(lats)), "samples")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// rank orders the states of a sync: phase, then layer.
func rank(phase string, layer int) int { return phaseOrder[phase]*1000 + layer }

func msgRank(msg string) (int, bool) {
	ph := phaseOf(msg)
	if _, ok := phaseOrder[ph]; !ok {
		return 0, false
	}
	layer := 0
	if _, rest, ok := strings.Cut(msg, " layer "); ok {
		n, _, _ := strings.Cut(rest, "/")
		layer, _ = strconv.Atoi(n)
	}
	return rank(ph, layer), true
}

// phaseLatencies returns, for each state change of a sync (a phase or a
// layer), the time until a watch showed it or a later state; and how many
// states the watch showed, of how many there were.
func phaseLatencies(evs []pipeline.Event, vs []seen) (lats []time.Duration, shown, total int) {
	seenRank := map[int]bool{}
	for _, v := range vs {
		if r, ok := msgRank(v.cond(TypeProgressing).Message); ok {
			seenRank[r] = true
		}
	}
	done := map[int]bool{}
	for _, e := range evs {
		layer := 0
		if e.Phase == pipeline.PhasePulling {
			layer = e.Layer
		}
		r := rank(string(e.Phase), layer)
		if e.Phase == pipeline.PhaseFailed || done[r] {
			continue
		}
		done[r] = true
		total++
		if seenRank[r] {
			shown++
		}
		for _, v := range vs {
			if vr, ok := msgRank(v.cond(TypeProgressing).Message); ok && vr >= r && !v.at.Before(e.Time) {
				lats = append(lats, v.at.Sub(e.Time))
				break
			}
		}
	}
	return lats, shown, total
}

// The latency measure itself must find what a watch showed.
func TestPhaseLatencies(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []pipeline.Event{
		{Phase: pipeline.PhaseResolving, Time: at(0)},
		{Phase: pipeline.PhasePulling, Layer: 1, Time: at(10)},
		{Phase: pipeline.PhasePulling, Layer: 1, BytesDone: 5, Time: at(20)},
		{Phase: pipeline.PhasePulling, Layer: 2, Time: at(30)},
		{Phase: pipeline.PhaseValidating, Time: at(40)},
		{Phase: pipeline.PhasePublished, Time: at(50)},
	}
	status := func(msg string) *Status {
		return &Status{Conditions: []metav1.Condition{{Type: TypeProgressing, Message: msg}}}
	}
	vs := []seen{
		{at: at(5), status: status("Resolving x")},
		{at: at(35), status: status("Pulling d layer 2/2: 1/2 B")},
		{at: at(70), status: status("Published d in 0.1s")},
	}
	lats, shown, total := phaseLatencies(evs, vs)
	want := []time.Duration{5, 25, 5, 30, 20}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if fmt.Sprint(lats) != fmt.Sprint(want) || shown != 3 || total != 5 {
		t.Fatalf("got %v, %d shown of %d; want %v, 3 of 5", lats, shown, total, want)
	}
}
