package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/storage/fs"
	csync "github.com/catalogsync/catalogsync/sync"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/sync/status"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// BenchmarkStatusLatency measures how soon a ClusterCatalog's status shows
// what a sync is doing, against a real kube-apiserver (with etcd) that has
// the CRD from deploy/crd. As in sync/status's own benchmark, the service
// part runs in this process (the ClusterCatalog Source, the status Writer
// with its production settings and the sync pipeline, from a real
// registry into a local store) so the pipeline's own event times are
// known: each iteration creates a ClusterCatalog and waits until a watch
// shows it Succeeded and Serving. Latency is from the pipeline's event of
// a phase (or layer) change to the first watch event showing that phase or
// a later one. The baseline, write-watch-floor, is the apiserver alone in
// the same run: from sending a merge patch to the watch event carrying it.
func BenchmarkStatusLatency(b *testing.B) {
	f := setup(b)
	c := startStatusCluster(b)
	svc := startStatusService(b, c, f)

	b.Run("write-watch-floor", func(b *testing.B) {
		name := "floor-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		c.create(b, name, f.registry.Host+"/bench/none:v1")
		rec := c.record(b, name)
		rec.wait(b, "created", func(v seen) bool { return true })
		var lats []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range 10 {
				val := fmt.Sprintf("%d-%d", i, j)
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench/seq":%q}}}`, val)
				start := time.Now()
				if _, err := c.res.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					b.Fatal(err)
				}
				v := rec.wait(b, "annotation "+val, func(v seen) bool { return v.annotations["bench/seq"] == val })
				lats = append(lats, v.at.Sub(start))
			}
		}
		b.StopTimer()
		reportLatencies(b, lats)
	})

	sets := []struct{ name, dir string }{
		{"tiny", "../testdata/fbc/tiny/configs"},
		{"community-v4.21-3pkgs", "../testdata/fbc/community-v4.21-3pkgs/configs"},
		{"community-v4.21", ""}, // the shared catalog
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			if set.dir == "" {
				if msg := sharedMissing(); msg != "" {
					b.Skip(msg)
				}
				set.dir = sharedDir()
			}
			dir, err := filepath.Abs(set.dir)
			if err != nil {
				b.Fatal(err)
			}
			ref := f.registry.Host + "/bench/status-" + set.name + ":v1"
			if _, err := imagebuild.Push(context.Background(), f.rc, ref, imagebuild.FromDir(dir, "/configs")); err != nil {
				b.Fatal(err)
			}
			var lats []time.Duration
			var versions, shown, phases int
			var syncTime time.Duration
			applies0 := svc.settledApplies()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				name := "bench-" + strconv.FormatInt(svc.seq.Add(1), 10)
				rec := c.record(b, name)
				c.create(b, name, ref)
				rec.wait(b, "Succeeded and Serving", func(v seen) bool {
					return v.cond(status.TypeServing).Status == metav1.ConditionTrue &&
						strings.HasPrefix(v.cond(status.TypeProgressing).Message, "Published ")
				})
				vs := rec.versions()
				versions += len(vs) - 1 // the first is the creation
				evs := svc.events.of(name)
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
			b.ReportMetric(float64(svc.settledApplies()-applies0)/n, "applies/sync")
			b.ReportMetric(float64(versions)/n, "versions/sync")
			b.ReportMetric(float64(shown)/n, "shown/sync")
			b.ReportMetric(float64(phases)/n, "phases/sync")
			b.ReportMetric(ms(syncTime)/n, "sync-ms")
			reportLatencies(b, lats)
		})
	}
}

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

// statusCluster is a real kube-apiserver with the ClusterCatalog CRD.
type statusCluster struct {
	dyn dynamic.Interface
	res dynamic.NamespaceableResourceInterface
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func startStatusCluster(b *testing.B) *statusCluster {
	b.Helper()
	k := servers.StartKube(b)
	cfg, err := status.RESTConfig(k.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c := &statusCluster{dyn: dyn, res: dyn.Resource(status.GVR)}
	raw, err := os.ReadFile("../deploy/crd/clustercatalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("create CRD: %v", err)
	}
	for {
		if _, err := c.res.List(ctx, metav1.ListOptions{}); err == nil {
			return c
		} else if ctx.Err() != nil {
			b.Fatalf("ClusterCatalogs not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *statusCluster) create(b *testing.B, name, image string) {
	b.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": status.GVR.GroupVersion().String(), "kind": "ClusterCatalog",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"source": map[string]any{
			"type": status.SourceTypeImage, "image": map[string]any{"ref": image}}},
	}}
	if _, err := c.res.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		b.Fatalf("create %s: %v", name, err)
	}
}

// statusService plays serve's part in ClusterCatalog mode: the Source
// calls back on a new catalog, which is synced once with the Writer (and
// an event log) observing.
type statusService struct {
	w      *status.Writer
	events *eventLog
	seq    atomic.Int64
}

func startStatusService(b *testing.B, c *statusCluster, f *fixture) *statusService {
	b.Helper()
	st, err := fs.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	reg, err := source.New(source.WithHosts(source.Host{Name: f.registry.Host, PlainHTTP: true}), source.WithDockerConfig(false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	pl := csync.NewPipeline(reg, st, csync.WithTempDir(b.TempDir()))

	queue := make(chan string, 1024)
	src := status.NewSource(c.dyn, status.WithOnChange(func(name string) {
		if strings.HasPrefix(name, "bench-") {
			queue <- name
		}
	}))
	w, err := status.NewWriter(c.dyn, src, st, "http://catalogsync.bench.svc")
	if err != nil {
		b.Fatal(err)
	}
	s := &statusService{w: w, events: &eventLog{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); src.Run(ctx) }()
	go func() { defer wg.Done(); w.Run(ctx) }()
	go func() {
		defer wg.Done()
		synced := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case name := <-queue:
				cat, ok := src.Get(name)
				if !ok || synced[name] {
					continue
				}
				synced[name] = true
				sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
				pl.Run(sctx, cat.SyncCatalog(), w, s.events)
				scancel()
			}
		}
	}()
	b.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := src.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	return s
}

// settledApplies waits until the Writer's apply count has not moved for
// half a second (a watch can deliver an apply's result before the Writer
// has counted it) and returns it.
func (s *statusService) settledApplies() int64 {
	n := s.w.Stats().Applies
	for {
		time.Sleep(500 * time.Millisecond)
		m := s.w.Stats().Applies
		if m == n {
			return n
		}
		n = m
	}
}

// eventLog records sync events with their times.
type eventLog struct {
	mu  sync.Mutex
	evs []csync.Event
}

func (l *eventLog) Observe(e csync.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) of(name string) []csync.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []csync.Event
	for _, e := range l.evs {
		if e.Catalog == name {
			out = append(out, e)
		}
	}
	return out
}

// seen is one version of a catalog as a watch delivered it.
type seen struct {
	at          time.Time
	annotations map[string]string
	status      status.Status
}

func (s seen) cond(t string) metav1.Condition {
	if c := s.status.Condition(t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// recorder keeps every version of one catalog a watch delivers, with the
// time it arrived.
type recorder struct {
	mu   sync.Mutex
	all  []seen
	wake chan struct{}
}

// record watches name from now on, until b ends.
func (c *statusCluster) record(b *testing.B, name string) *recorder {
	b.Helper()
	rec := &recorder{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.Cleanup(func() { cancel(); <-done })
	ready := make(chan struct{})
	go func() {
		defer close(done)
		rv := ""
		first := true
		for ctx.Err() == nil {
			w, err := c.res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
			if first {
				close(ready)
				first = false
			}
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
						rv = ""
					}
					break
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Deleted {
					continue
				}
				at := time.Now()
				rv = u.GetResourceVersion()
				v := seen{at: at, annotations: u.GetAnnotations()}
				if m, ok := u.Object["status"].(map[string]any); ok {
					runtime.DefaultUnstructuredConverter.FromUnstructured(m, &v.status)
				}
				rec.mu.Lock()
				rec.all = append(rec.all, v)
				rec.mu.Unlock()
				select {
				case rec.wake <- struct{}{}:
				default:
				}
			}
			w.Stop()
		}
	}()
	<-ready
	return rec
}

func (r *recorder) versions() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// wait returns the first version that satisfies ok.
func (r *recorder) wait(b *testing.B, what string, ok func(seen) bool) seen {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, s := range r.versions() {
			if ok(s) {
				return s
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			b.Fatalf("no version with %s within 2m", what)
		}
		select {
		case <-r.wake:
		case <-time.After(left):
		}
	}
}

// phaseOrder ranks the first word of a Progressing message.
var phaseOrder = map[string]int{"Resolving": 0, "Pulling": 1, "Unpacking": 2, "Validating": 3, "Indexing": 4, "Publishing": 5, "Published": 6}

// rank orders the states of a sync: phase, then layer.
func rank(phase string, layer int) int { return phaseOrder[phase]*1000 + layer }

func msgRank(msg string) (int, bool) {
	ph, _, _ := strings.Cut(msg, " ")
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
		if r, ok := msgRank(v.cond(status.TypeProgressing).Message); ok {
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
			if vr, ok := msgRank(v.cond(status.TypeProgressing).Message); ok && vr >= r && !v.at.Before(e.Time) {
				lats = append(lats, v.at.Sub(e.Time))
				break
			}
		}
	}
	return lats, shown, total
}

// The latency measure must find what a watch showed.
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
	st := func(msg string) status.Status {
		return status.Status{Conditions: []metav1.Condition{{Type: status.TypeProgressing, Message: msg}}}
	}
	vs := []seen{
		{at: at(5), status: st("Resolving x")},
		{at: at(35), status: st("Pulling d layer 2/2: 1/2 B")},
		{at: at(70), status: st("Published d in 0.1s")},
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
