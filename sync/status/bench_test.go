package status

import (
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

	csync "github.com/catalogsync/catalogsync/sync"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// sharedCommunity is the full community catalog (745 bundles) from the
// workplace's shared test data; benchmarks skip it when it is absent.
const sharedCommunity = "../../../shared/testdata/fbc/community-v4.21/configs"

var benchSeq atomic.Int64

// BenchmarkStatus creates a ClusterCatalog per iteration on a real
// kube-apiserver, syncs it from a real registry with the Writer observing,
// and waits until a watch shows it Succeeded and Serving. It reports:
//
//   - applies/sync: status applies the Writer made per sync;
//   - versions/sync: object versions a watch saw after creation (the
//     label, then each status write);
//   - shown/sync: distinct phases (layers count apart) that appeared in
//     the watch, of phases/sync the sync went through;
//   - lat-mean-ms, lat-max-ms: from a phase's first event to the first
//     watch version showing that phase or a later one.
func BenchmarkStatus(b *testing.B) {
	c := startCluster(b)
	r := startRegistry(b)
	events := &eventLog{}
	s := newService(b, c, r, func(n string) bool { return strings.HasPrefix(n, "bench-") }, events)

	pkgs3 := filepath.Join("..", "..", "testdata", "fbc", "community-v4.21-3pkgs", "configs")
	sets := []struct {
		name, dir string
		pull      time.Duration // throttle the layer to last about this long
	}{
		{"tiny", filepath.Join("..", "..", "testdata", "fbc", "tiny", "configs"), 0},
		{"community-3pkgs", pkgs3, 0},
		{"community-v4.21", sharedCommunity, 0},
		// Bytes move for 5 s: applies stay at about one a second.
		{"community-3pkgs-5s-pull", pkgs3, 5 * time.Second},
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			if _, err := os.Stat(set.dir); err != nil {
				b.Skipf("%s not found (the shared test data is not in a user's clone)", set.dir)
			}
			img := imagebuild.FromDir(set.dir, "/configs")
			ref, _ := r.push("bench/"+set.name+":v1", img)
			if set.pull > 0 {
				r.proxy.Inject(servers.Throttle(max(layerSize(b, img)*int64(time.Second)/int64(set.pull), 1)), 0, servers.BlobGET)
				defer r.proxy.Clear()
			}
			var lats []time.Duration
			var versions, shown, phases int
			applies0 := s.settledApplies()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				name := "bench-" + strconv.FormatInt(benchSeq.Add(1), 10)
				rec := record(b, c, name)
				c.create(b, name, ref)
				rec.wait(2*time.Minute, "Succeeded and Serving", func(v seen) bool {
					return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) &&
						strings.HasPrefix(v.cond(TypeProgressing).Message, "Published ")
				})
				vs := rec.versions()
				versions += len(vs) - 1 // the first is the creation
				l, sh, ph := phaseLatencies(events.of(name), vs)
				lats = append(lats, l...)
				shown += sh
				phases += ph
			}
			b.StopTimer()
			applies := s.settledApplies() - applies0
			n := float64(b.N)
			b.ReportMetric(float64(applies)/n, "applies/sync")
			b.ReportMetric(float64(versions)/n, "versions/sync")
			b.ReportMetric(float64(shown)/n, "shown/sync")
			b.ReportMetric(float64(phases)/n, "phases/sync")
			if len(lats) > 0 {
				var sum time.Duration
				for _, d := range lats {
					sum += d
				}
				b.ReportMetric(float64(sum.Milliseconds())/float64(len(lats)), "lat-mean-ms")
				b.ReportMetric(float64(slices.Max(lats).Milliseconds()), "lat-max-ms")
			}
		})
	}
}

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
func phaseLatencies(evs []csync.Event, vs []seen) (lats []time.Duration, shown, total int) {
	seenRank := map[int]bool{}
	for _, v := range vs {
		if r, ok := msgRank(v.cond(TypeProgressing).Message); ok {
			seenRank[r] = true
		}
	}
	done := map[int]bool{}
	for _, e := range evs {
		layer := 0
		if e.Phase == csync.PhasePulling {
			layer = e.Layer
		}
		r := rank(string(e.Phase), layer)
		if e.Phase == csync.PhaseFailed || done[r] {
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
	evs := []csync.Event{
		{Phase: csync.PhaseResolving, Time: at(0)},
		{Phase: csync.PhasePulling, Layer: 1, Time: at(10)},
		{Phase: csync.PhasePulling, Layer: 1, BytesDone: 5, Time: at(20)},
		{Phase: csync.PhasePulling, Layer: 2, Time: at(30)},
		{Phase: csync.PhaseValidating, Time: at(40)},
		{Phase: csync.PhasePublished, Time: at(50)},
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
