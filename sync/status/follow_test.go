package status

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// followRig is a rig whose Writer runs no syncs (a member cluster's).
func followRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.w.followOnly = true
	return r
}

// A member cluster's catalog is Retrying until the store has it, then
// Serving, and a Refresh is what makes the Writer read the pointer again.
func TestFollowOnlyServesWhatIsPublished(t *testing.T) {
	t.Parallel()
	r := followRig(t)
	r.mustWrite()
	if c := r.cond(TypeServing); c.Status != metav1.ConditionFalse || c.Reason != ReasonUnavailable {
		t.Fatalf("Serving before any publish: %+v", c)
	}
	if c := r.cond(TypeProgressing); c.Reason != ReasonRetrying || !strings.Contains(c.Message, testImage) {
		t.Fatalf("Progressing before any publish: %+v", c)
	}
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	if c := r.cond(TypeServing); c.Status != metav1.ConditionFalse {
		t.Fatalf("the pointer was read again without a Refresh: %+v", c)
	}
	r.w.Refresh("cat")
	r.mustWrite()
	if c := r.cond(TypeServing); c.Status != metav1.ConditionTrue || c.Reason != ReasonAvailable {
		t.Fatalf("Serving after publish and Refresh: %+v", c)
	}
	if c := r.cond(TypeProgressing); c.Reason != ReasonSucceeded || !strings.Contains(c.Message, digest1) {
		t.Fatalf("Progressing after publish: %+v", c)
	}
	st := r.fc.status()
	if st.ResolvedSource == nil || !strings.HasSuffix(st.ResolvedSource.Image.Ref, "@"+digest1) || st.URLs == nil || st.URLs.Base != testBaseURL+"/catalogs/cat" {
		t.Fatalf("status %+v", st)
	}
}

// A spec asking for another image than the store has keeps serving what
// the store has, as catalogd serves the old content until the new one is
// unpacked, and says what it waits for.
func TestFollowOnlyOtherImageIsRetrying(t *testing.T) {
	t.Parallel()
	r := followRig(t)
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	r.edit(func(c *ClusterCatalog) { c.Image = catalogspec.ParseImage("registry.test/cat:v2") })
	r.mustWrite()
	p := r.cond(TypeProgressing)
	if p.Reason != ReasonRetrying || p.ObservedGeneration != 2 || !strings.Contains(p.Message, "registry.test/cat:v2") || !strings.Contains(p.Message, testImage) {
		t.Fatalf("Progressing %+v", p)
	}
	if c := r.cond(TypeServing); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 2 {
		t.Fatalf("Serving %+v", c)
	}
	if ref := r.fc.status().ResolvedSource.Image.Ref; !strings.HasSuffix(ref, "@"+digest1) {
		t.Fatalf("resolvedSource %s", ref)
	}
}

// A flood of refreshes of one catalog is one queued read.
func TestRefreshFloodIsOneRead(t *testing.T) {
	t.Parallel()
	r := followRig(t)
	for range 10000 {
		r.w.Refresh("cat")
	}
	if n := r.w.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d items, want 1", n)
	}
	r.mustWrite()
	r.fc.mu.Lock()
	reads := r.fc.ptrReads
	r.fc.mu.Unlock()
	if reads != 1 {
		t.Fatalf("%d pointer reads, want 1", reads)
	}
}
