package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/catalogsync/catalogsync/storage/catalog"
)

// ourManagers lists the applies of this service in the object's
// managedFields, as the apiserver counts them (the test's own create shows
// as an Update by the client's user agent).
func ourManagers(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		if strings.HasPrefix(mf.Manager, DefaultFieldManager) && mf.Operation == metav1.ManagedFieldsOperationApply {
			out = append(out, fmt.Sprintf("%s(%s %s)", mf.Manager, mf.Operation, mf.Subresource))
		}
	}
	return out
}

// A ClusterCatalog carrying catalogd's finalizer is catalogd's: its status
// is left alone (no apply at all, by the apiserver's managedFields), the
// reason is logged once and counted, and its content is still synced and
// served. Once the finalizer goes (catalogd uninstalled), the status is
// written.
func TestLeavesCatalogdsClusterCatalogAlone(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	ref, digest := r.push("catalogd/catalog:v1", catalogImage(t, "tiny"))
	s := newService(t, c, r, only("by-catalogd", "control"))

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "by-catalogd", "finalizers": []any{CatalogdFinalizer}},
		"spec":     map[string]any{"source": map[string]any{"type": SourceTypeImage, "image": map[string]any{"ref": ref}}},
	}}
	if _, err := c.res.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeFinalizers(c, "by-catalogd") })
	d := s.waitSyncs("by-catalogd", 1, time.Minute)[0]
	if d.err != nil || d.res.Digest != digest {
		t.Fatalf("sync of catalogd's catalog: %v (digest %s): its content must still be synced", d.err, d.res.Digest)
	}
	if !s.src.Available("by-catalogd") {
		t.Error("Available(by-catalogd) is false: its content must still be served")
	}
	// A control catalog synced after it: once its status is written and
	// the Writer has looked at catalogd's, nothing more is coming.
	rec := record(t, c, "control")
	c.create(t, "control", ref)
	rec.wait(time.Minute, "control Serving True", func(v seen) bool { return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) })
	if err := eventually(30*time.Second, func() error {
		if n := s.w.Stats().LeftAlone; n != 1 {
			return fmt.Errorf("LeftAlone %d, want 1", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := c.res.Get(context.Background(), "by-catalogd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := ourManagers(got); len(m) > 0 {
		t.Fatalf("catalogsync wrote to catalogd's ClusterCatalog: managedFields %v, status %v", m, got.Object["status"])
	}
	if _, found, _ := unstructured.NestedMap(got.Object, "status"); found {
		t.Errorf("status %v on catalogd's catalog", got.Object["status"])
	}
	if !strings.Contains(s.logs(), "managed by catalogd too; leaving its status alone") {
		t.Errorf("no log line saying why; log:\n%s", s.logs())
	}

	// catalogd gone: the finalizer removed, the status is ours again.
	removeFinalizers(c, "by-catalogd")
	rec2 := record(t, c, "by-catalogd")
	c.patchSpec(t, "by-catalogd", map[string]any{"priority": 1})
	v, _ := rec2.wait(time.Minute, "Serving True once catalogd is gone", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable)
	})
	if p, _, _ := catalog.Current(context.Background(), r.store, "by-catalogd"); !strings.HasSuffix(v.status.ResolvedSource.Image.Ref, "@"+p.Digest) {
		t.Errorf("resolvedSource %+v, pointer %s", v.status.ResolvedSource, p.Digest)
	}
}

func removeFinalizers(c *cluster, name string) {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, _ = c.res.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
}
