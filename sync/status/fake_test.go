package status

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// fakeCluster is one ClusterCatalog and its published pointer, in memory:
// the Writer's applier and catalogView. Its status apply keeps, per field
// manager, the status last applied, and merges them in the order of the
// applies (conditions by type), as server-side apply with Force does for
// fields that two managers do not both set.
type fakeCluster struct {
	mu     sync.Mutex
	cat    ClusterCatalog
	rv     int
	labels map[string]string
	// labelApplies counts metadata applies (the label); ptrReads pointer reads.
	ptrReads     int
	labelApplies int
	labelErr     error              // fails label applies only
	owners       []string           // managers, least recent apply first
	applied      map[string]*Status // each manager's last status apply
	appliedAt    map[string]time.Time
	now          func() time.Time // the apiserver's clock, for managedFields times
	applies      []fakeApply
	failErr      error            // returned by every apply while set
	failFor      map[string]error // fails the status applies of one field manager
	ptr          *catalog.Pointer
	ptrErr       error
	onPointer    func() // called as each pointer read starts
}

type fakeApply struct {
	manager string
	status  *Status
}

func newFakeCluster(name, image string) *fakeCluster {
	return &fakeCluster{cat: ClusterCatalog{Catalog: catalogspec.Catalog{Name: name, Image: catalogspec.ParseImage(image)}, AvailabilityMode: AvailabilityModeAvailable, Generation: 1},
		rv: 1, labels: map[string]string{}, applied: map[string]*Status{}, appliedAt: map[string]time.Time{}, now: time.Now}
}

var _ applier = (*fakeCluster)(nil)
var _ catalogView = (*fakeCluster)(nil)

func (f *fakeCluster) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	// A client gives up on a request whose context is over, as client-go does.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkLocked(name, obj); err != nil {
		return nil, err
	}
	if err := f.failFor[opts.FieldManager]; err != nil {
		return nil, err
	}
	raw, _, _ := unstructured.NestedMap(obj.Object, "status")
	var st Status
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	f.applies = append(f.applies, fakeApply{manager: opts.FieldManager, status: &st})
	f.owners = append(slices.DeleteFunc(f.owners, func(m string) bool { return m == opts.FieldManager }), opts.FieldManager)
	f.applied[opts.FieldManager] = &st
	f.appliedAt[opts.FieldManager] = f.now().UTC().Truncate(time.Second)
	f.rv++
	return f.objectLocked(), nil
}

func (f *fakeCluster) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, _ metav1.ApplyOptions, _ ...string) (*unstructured.Unstructured, error) {
	// A client gives up on a request whose context is over, as client-go does.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkLocked(name, obj); err != nil {
		return nil, err
	}
	if f.labelErr != nil {
		return nil, f.labelErr
	}
	f.labelApplies++
	for k, v := range obj.GetLabels() {
		f.labels[k] = v
	}
	f.rv++
	return f.objectLocked(), nil
}

// checkLocked refuses an apply as the apiserver would: injected failures,
// and a resourceVersion precondition the object no longer meets.
func (f *fakeCluster) checkLocked(name string, obj *unstructured.Unstructured) error {
	if f.failErr != nil {
		return f.failErr
	}
	if name != f.cat.Name {
		return apierrors.NewNotFound(GVR.GroupResource(), name)
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != strconv.Itoa(f.rv) {
		return apierrors.NewConflict(GVR.GroupResource(), name, errors.New("the object has been modified"))
	}
	return nil
}

// statusLocked merges the managers' applies.
func (f *fakeCluster) statusLocked() *Status {
	st := &Status{}
	for _, m := range f.owners {
		a := f.applied[m]
		for _, c := range a.Conditions {
			if prev := st.Condition(c.Type); prev != nil {
				*prev = c
			} else {
				st.Conditions = append(st.Conditions, c)
			}
		}
		if a.ResolvedSource != nil {
			st.ResolvedSource = a.ResolvedSource
		}
		if a.URLs != nil {
			st.URLs = a.URLs
		}
		if a.LastUnpacked != nil {
			st.LastUnpacked = a.LastUnpacked
		}
	}
	return st
}

func (f *fakeCluster) objectLocked() *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range f.labels {
		labels[k] = v
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f.statusLocked())
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": f.cat.Name, "resourceVersion": strconv.Itoa(f.rv),
			"generation": f.cat.Generation, "labels": labels},
		"spec": map[string]any{"availabilityMode": f.cat.AvailabilityMode,
			"source": map[string]any{"type": SourceTypeImage, "image": map[string]any{"ref": f.cat.Image.String()}}},
		"status": status,
	}}
	// The Progressing condition belongs to whoever applied it last, as
	// server-side apply with force gives it, since that apply.
	for _, m := range slices.Backward(f.owners) {
		if f.applied[m].Condition(TypeProgressing) != nil {
			at := metav1.NewTime(f.appliedAt[m])
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: m, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status",
				Time: &at, FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Progressing\"}":{}}}}`)}})
			break
		}
	}
	return u
}

func (f *fakeCluster) get(name string) (object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != f.cat.Name {
		return object{}, false
	}
	o, err := parseObject(f.objectLocked())
	if err != nil {
		panic(err)
	}
	return o, true
}

func (f *fakeCluster) pointer(context.Context, string) (catalog.Pointer, error) {
	if f.onPointer != nil {
		f.onPointer()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ptrReads++
	switch {
	case f.ptrErr != nil:
		return catalog.Pointer{}, f.ptrErr
	case f.ptr == nil:
		return catalog.Pointer{}, storage.ErrNotExist
	}
	return *f.ptr, nil
}

// publish moves the pointer, as a completed publish does.
func (f *fakeCluster) publish(digest string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ptr = &catalog.Pointer{Digest: digest, Ref: f.cat.Image.String(), ResolvedRef: "registry.test/cat@" + digest,
		ResolvedAt: at, PublishedAt: at}
}

// edit changes the spec, as a user's edit: a new generation.
func (f *fakeCluster) edit(fn func(*ClusterCatalog)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.cat)
	f.cat.Generation++
	f.rv++
}

// touch makes a new resourceVersion, as another writer's update.
func (f *fakeCluster) touch() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
}

func (f *fakeCluster) setPointerErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ptrErr = err
}

func (f *fakeCluster) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failErr = err
}

func (f *fakeCluster) status() *Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusLocked()
}

func (f *fakeCluster) statusApplies() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applies)
}

// rig is a Writer on a fakeCluster with a clock the test moves. Its
// workers do not run: the test writes the status with write.
type rig struct {
	t   *testing.T
	fc  *fakeCluster
	w   *Writer
	mu  sync.Mutex
	now time.Time
}

const (
	testImage = "registry.test/cat:v1"
	digest1   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digest2   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, newFakeCluster("cat", testImage))
}

// newRigOn is a new Writer (a restarted process) on fc.
func newRigOn(t *testing.T, fc *fakeCluster) *rig {
	t.Helper()
	r := &rig{t: t, fc: fc, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	w, err := NewWriter(nil, nil, nil, testBaseURL, WithWriterReplica("r1"),
		func(w *Writer) { w.res, w.view, w.now = r.fc, r.fc, r.clock })
	if err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	fc.now = r.clock // one clock for the test's writer and apiserver
	fc.mu.Unlock()
	t.Cleanup(w.queue.ShutDown)
	r.w = w
	return r
}

func (r *rig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *rig) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
}

// edit changes the spec and tells the Writer, as the informer does.
func (r *rig) edit(fn func(*ClusterCatalog)) {
	r.fc.edit(fn)
	r.w.sourceEvent("cat")
}

// observe delivers a sync event of the catalog, timed now.
func (r *rig) observe(e pipeline.Event) {
	e.Catalog, e.Time = "cat", r.clock()
	r.w.Observe(e)
}

// write runs the Writer's work on the catalog as a worker would, and
// returns how long it asks to wait. A re-read of the pointer it asks for
// (a wait of 1 ms) is done at once.
func (r *rig) write() (time.Duration, error) {
	r.t.Helper()
	for range 3 {
		_, wait, err := r.w.write(context.Background(), "cat")
		if err != nil || wait != time.Millisecond {
			return wait, err
		}
	}
	r.t.Fatal("the Writer keeps asking to re-read the pointer")
	return 0, nil
}

func (r *rig) mustWrite() time.Duration {
	r.t.Helper()
	wait, err := r.write()
	if err != nil {
		r.t.Fatal(err)
	}
	return wait
}

func (r *rig) cond(typ string) metav1.Condition {
	if c := r.fc.status().Condition(typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}
