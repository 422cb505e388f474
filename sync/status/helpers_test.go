package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

const testBaseURL = "https://catalogsync.catalogsync-system.svc"

// cluster is a real kube-apiserver (with etcd) with the CRD from
// deploy/crd installed.
type cluster struct {
	kube *servers.KubeAPIServer
	dyn  dynamic.Interface
	res  dynamic.NamespaceableResourceInterface
}

// sharedCRD installs the CRD once in the package's shared apiserver.
var sharedCRD struct {
	once      sync.Once
	installed bool
}

// startCluster returns the kube-apiserver the package's tests share, with
// the CRD installed: starting one takes longer than most tests here. Each
// test starts with no ClusterCatalog and leaves none behind, since a
// Writer or a ClusterCatalogs sees every object in the cluster. Tests are
// not run in parallel with each other here.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	c := newCluster(t, servers.SharedKube(t))
	sharedCRD.once.Do(func() {
		c.installCRD(t)
		sharedCRD.installed = true
	})
	if !sharedCRD.installed {
		t.Fatal("CRD not installed in the shared apiserver (see the first test that asked for it)")
	}
	c.deleteAll(t)
	t.Cleanup(func() { c.deleteAll(t) })
	return c
}

// startOwnCluster starts an apiserver for one test alone: for a test that
// stops or restarts it.
func startOwnCluster(t testing.TB) *cluster {
	t.Helper()
	c := newCluster(t, servers.StartKube(t))
	c.installCRD(t)
	return c
}

func newCluster(t testing.TB, k *servers.KubeAPIServer) *cluster {
	t.Helper()
	cfg, err := kubeclient.Config(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{kube: k, dyn: dyn, res: dyn.Resource(GVR)}
}

// deleteAll deletes every ClusterCatalog, finalizers and all, and waits
// until none is left.
func (c *cluster) deleteAll(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		l, err := c.res.List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("ClusterCatalogs left in the shared apiserver: %v", err)
		}
		if err == nil {
			for _, u := range l.Items {
				if len(u.GetFinalizers()) > 0 {
					removeFinalizers(c, u.GetName())
				}
				_ = c.res.Delete(ctx, u.GetName(), metav1.DeleteOptions{})
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRD creates the CRD as shipped and waits until ClusterCatalogs
// can be listed.
func (c *cluster) installCRD(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crd", "clustercatalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	for {
		_, err := c.res.List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("ClusterCatalogs not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type catalogOpt func(map[string]any)

func unavailable(spec map[string]any) { spec["availabilityMode"] = AvailabilityModeUnavailable }

func (c *cluster) create(t testing.TB, name, image string, opts ...catalogOpt) {
	t.Helper()
	spec := map[string]any{"source": map[string]any{"type": SourceTypeImage, "image": map[string]any{"ref": image}}}
	for _, o := range opts {
		o(spec)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
	if _, err := c.res.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// patchSpec merges spec into the catalog's spec, as a user's edit.
func (c *cluster) patchSpec(t testing.TB, name string, spec map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(map[string]any{"spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.res.Patch(context.Background(), name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s: %v", name, err)
	}
}

func (c *cluster) get(t testing.TB, name string) object {
	t.Helper()
	u, err := c.res.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseObject(u)
	if err != nil {
		t.Fatal(err)
	}
	if o.status == nil {
		o.status = &Status{}
	}
	return o
}

// registry is a real registry behind a fault-injecting proxy, and a
// pipeline that reads through the proxy into a filesystem store.
type registry struct {
	t     testing.TB
	reg   *servers.Registry
	proxy *servers.Proxy
	store storage.Store
	pl    *pipeline.Pipeline
}

func startRegistry(t testing.TB) *registry {
	t.Helper()
	r := &registry{t: t}
	r.reg = servers.StartRegistry(t)
	r.proxy = servers.NewProxy(t, r.reg.URL)
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	src, err := source.New(source.WithHosts(source.Host{Name: r.proxy.Host, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	r.pl = pipeline.New(src, st, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	return r
}

// push writes img straight to the registry (the proxy sees only the
// syncs) and returns its reference through the proxy, and its digest.
func (r *registry) push(repoTag string, img imagebuild.Image) (ref, digest string) {
	r.t.Helper()
	d, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(r.reg.Host), r.reg.Host+"/"+repoTag, img)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.proxy.Host + "/" + repoTag, d
}

func catalogImage(t testing.TB, set string) imagebuild.Image {
	return imagebuild.FromDir(testdataDir(set), "/configs")
}

// testdataDir is the FBC folder of one of the repository's test catalogs.
func testdataDir(set string) string {
	return filepath.Join("..", "..", "testdata", "fbc", set, "configs")
}

// layerSize is the compressed size of img's only layer.
func layerSize(t testing.TB, img imagebuild.Image) int64 {
	t.Helper()
	desc, _, err := imagebuild.WriteLayer(io.Discard, img.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	return desc.Size
}

// service plays the engine's part: a ClusterCatalogs whose OnChange syncs the
// catalog at once (retrying retryable failures with backoff), and a Writer
// that reports every sync.
type service struct {
	t       testing.TB
	c       *cluster
	r       *registry
	src     *ClusterCatalogs
	w       *Writer
	backoff backoff.Backoff
	mine    func(name string) bool
	extra   []pipeline.Observer

	mu      sync.Mutex
	changes []string
	changed map[string]int
	done    []syncDone
	kick    chan struct{}
	logBuf  strings.Builder
}

// logs returns what the service's Writer logged.
func (s *service) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logBuf.String()
}

type serviceLog struct{ s *service }

func (l serviceLog) Write(b []byte) (int, error) {
	l.s.t.Log(strings.TrimRight(string(b), "\n"))
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.logBuf.Write(b)
}

type syncDone struct {
	name string
	res  pipeline.Result
	err  error
	at   time.Time
}

// only picks the catalogs a test's service syncs: the cluster also holds
// the catalogs of the tests before it.
func only(names ...string) func(string) bool {
	return func(n string) bool { return slices.Contains(names, n) }
}

func newService(t testing.TB, c *cluster, r *registry, mine func(string) bool, extra ...pipeline.Observer) *service {
	t.Helper()
	s := &service{t: t, c: c, r: r, mine: mine, extra: extra, kick: make(chan struct{}, 1), changed: map[string]int{},
		backoff: backoff.Backoff{Min: 300 * time.Millisecond, Max: 600 * time.Millisecond}}
	s.src = NewClusterCatalogs(c.dyn, WithOnChange(func(name string) {
		if !s.mine(name) {
			return
		}
		s.mu.Lock()
		s.changes = append(s.changes, name)
		s.changed[name]++
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}), WithClusterCatalogsLogger(testLogger(t)))
	w, err := NewWriter(c.dyn, s.src, r.store, testBaseURL,
		WithApplyBackoff(backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}),
		WithWriterLogger(slog.New(slog.NewTextHandler(serviceLog{s}, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.src.Run(ctx) }()
	go func() { defer wg.Done(); s.w.Run(ctx) }()
	go func() { defer wg.Done(); s.loop(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.src.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// loop syncs changed catalogs one at a time, retrying retryable failures
// until the next change of the catalog or success.
func (s *service) loop(ctx context.Context) {
	type retry struct {
		at       time.Time
		attempts int
	}
	retries := map[string]*retry{}
	for {
		s.mu.Lock()
		names := s.changes
		s.changes = nil
		s.mu.Unlock()
		for _, n := range names {
			retries[n] = &retry{}
		}
		var next time.Time
		for _, n := range slices.Sorted(mapKeys(retries)) {
			rt := retries[n]
			if time.Now().Before(rt.at) {
				if next.IsZero() || rt.at.Before(next) {
					next = rt.at
				}
				continue
			}
			c, ok := s.src.Get(n)
			if !ok || c.Unavailable() {
				delete(retries, n)
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			res, err := s.r.pl.Run(sctx, c.Catalog, append([]pipeline.Observer{s.w}, s.extra...)...)
			cancel()
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			s.done = append(s.done, syncDone{name: n, res: res, err: err, at: time.Now()})
			s.mu.Unlock()
			if se, ok := pipeline.AsError(err); ok && se.Retryable {
				rt.at = time.Now().Add(s.backoff.Delay(rt.attempts, se.RetryAfter))
				rt.attempts++
				if next.IsZero() || rt.at.Before(next) {
					next = rt.at
				}
				continue
			}
			delete(retries, n)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-time.After(wait):
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// settledApplies waits until the Writer's apply count has not moved for
// half a second (a watch can deliver an apply's result before the Writer
// has counted it) and returns it.
func (s *service) settledApplies() int64 {
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

// changeCount is how often OnChange reported name.
func (s *service) changeCount(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed[name]
}

// syncs returns the finished syncs of name so far.
func (s *service) syncs(name string) []syncDone {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []syncDone
	for _, d := range s.done {
		if d.name == name {
			out = append(out, d)
		}
	}
	return out
}

// waitSyncs waits until name has had at least n finished syncs.
func (s *service) waitSyncs(name string, n int, timeout time.Duration) []syncDone {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if d := s.syncs(name); len(d) >= n {
			return d
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: %d syncs after %v, want %d", name, len(s.syncs(name)), timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seen is one version of a catalog as a watch delivered it.
type seen struct {
	at          time.Time
	rv          string
	gen         int64
	labels      map[string]string
	annotations map[string]string
	status      *Status
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
	t    testing.TB
	mu   sync.Mutex
	all  []seen
	wake chan struct{}
}

// record watches name from now on, until the test ends. It re-watches
// after a disconnect (an apiserver restart) from the last version seen.
func record(t testing.TB, c *cluster, name string) *recorder {
	rec := &recorder{t: t, wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
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
				o, err := parseObject(u)
				if err != nil {
					continue
				}
				st := o.status
				if st == nil {
					st = &Status{}
				}
				rec.mu.Lock()
				rec.all = append(rec.all, seen{at: at, rv: o.rv, gen: o.cat.Generation, labels: u.GetLabels(), annotations: u.GetAnnotations(), status: st})
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

// wait returns the first version (from index from on) that satisfies ok.
func (r *recorder) wait(timeout time.Duration, what string, ok func(seen) bool) (seen, int) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all := r.versions()
		for i, s := range all {
			if ok(s) {
				return s, i
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			r.t.Fatalf("no version with %s within %v; saw:\n%s", what, timeout, describe(all))
		}
		select {
		case <-r.wake:
		case <-time.After(left):
		}
	}
}

func describe(all []seen) string {
	var b strings.Builder
	for _, s := range all {
		p, sv := s.cond(TypeProgressing), s.cond(TypeServing)
		fmt.Fprintf(&b, "  %s rv=%s gen=%d Progressing=%s/%s %q Serving=%s/%s %q\n", s.at.Format("15:04:05.000"), s.rv, s.gen,
			p.Status, p.Reason, p.Message, sv.Status, sv.Reason, sv.Message)
	}
	return b.String()
}

func isCond(s seen, typ string, status metav1.ConditionStatus, reason string) bool {
	c := s.status.Condition(typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// phaseOf tells the phase a Progressing message reports, by its first
// word; "Published" ends a sync.
func phaseOf(msg string) string {
	w, _, _ := strings.Cut(msg, " ")
	return w
}

var phaseOrder = map[string]int{"Resolving": 0, "Pulling": 1, "Unpacking": 2, "Validating": 3, "Indexing": 4, "Publishing": 5, "Published": 6}

// eventLog records sync events with their times, for latency figures.
type eventLog struct {
	mu  sync.Mutex
	evs []pipeline.Event
}

func (l *eventLog) Observe(e pipeline.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) of(name string) []pipeline.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []pipeline.Event
	for _, e := range l.evs {
		if e.Catalog == name {
			out = append(out, e)
		}
	}
	return out
}

var errTimeout = errors.New("timeout")

// eventually polls f until it returns nil or timeout passes.
func eventually(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v: %w", errTimeout, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testLogger logs to the test's output, so a failure shows what the
// ClusterCatalogs and Writer went through.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// applyAs applies one condition to fc's catalog as field manager m: what
// another writer (a replica, a restarted process) puts on the status.
func applyAs(t *testing.T, fc *fakeCluster, m string, c metav1.Condition) {
	t.Helper()
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&Status{Conditions: []metav1.Condition{c}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": fc.cat.Name}, "status": raw}}
	if _, err := fc.ApplyStatus(context.Background(), fc.cat.Name, u, metav1.ApplyOptions{FieldManager: m}); err != nil {
		t.Fatal(err)
	}
}
