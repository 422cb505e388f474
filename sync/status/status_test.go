package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// One kube-apiserver and one registry serve every scenario here; each
// scenario has its own catalogs and its own ClusterCatalogs and Writer.
func TestClusterCatalogStatus(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)

	t.Run("phases in order then serving", func(t *testing.T) { testPhases(t, c, r) })
	t.Run("registry 503 retrying without churn", func(t *testing.T) { testRetrying(t, c, r) })
	t.Run("missing label pinned is blocked", func(t *testing.T) { testBlocked(t, c, r) })
	t.Run("availability mode unavailable", func(t *testing.T) { testUnavailable(t, c, r) })
	t.Run("deleted catalog", func(t *testing.T) { testDeleted(t, c, r) })
}

// A new ClusterCatalog shows each phase while it runs, in order, then
// Succeeded and Serving with the published digest.
func testPhases(t *testing.T, c *cluster, r *registry) {
	img := catalogImage(t, "community-v4.21-3pkgs")
	ref, digest := r.push("phases/catalog:v1", img)
	// Slow the registry down so that each phase lasts long enough to be
	// seen: the manifest HEAD by a second, blobs to about 3 s for the
	// layer.
	r.proxy.Inject(servers.Delay(1200*time.Millisecond), 1, servers.ManifestHEAD)
	r.proxy.Inject(servers.Throttle(max(layerSize(t, img)/3, 1)), 0, servers.BlobGET)
	defer r.proxy.Clear()

	s := newService(t, c, r, only("phases"))
	rec := record(t, c, "phases")
	c.create(t, "phases", ref)

	final, _ := rec.wait(30*time.Second, "Succeeded and Serving True/Available", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) &&
			strings.HasPrefix(v.cond(TypeProgressing).Message, "Published ")
	})
	r.proxy.Clear()
	checkPhaseMessages(t, rec.versions(), ref, digest)
	checkServingFields(t, r, final, digest)
	if !s.src.Available("phases") {
		t.Error("Available(phases) is false")
	}

	// A poll that finds the same digest changes nothing.
	applies := s.settledApplies()
	before := len(rec.versions())
	res, err := r.pl.Run(context.Background(), catalogspec.Catalog{Name: "phases", Image: catalogspec.ParseImage(ref)}, s.w)
	if err != nil || res.Action != pipeline.ActionUpToDate {
		t.Fatalf("re-sync: %v %v, want UpToDate", res.Action, err)
	}
	time.Sleep(2 * time.Second)
	if n := len(rec.versions()); n != before || s.w.Stats().Applies != applies {
		t.Errorf("an up-to-date poll wrote the status: %d new versions, %d applies:\n%s", n-before, s.w.Stats().Applies-applies, describe(rec.versions()[before:]))
	}
}

// checkPhaseMessages checks the Progressing messages the catalog went
// through: phases in order, all True/Succeeded, byte counts about a second
// apart, and the outcome last.
func checkPhaseMessages(t *testing.T, all []seen, ref, digest string) {
	t.Helper()
	var msgs []string
	last := -1
	for _, v := range all {
		p := v.cond(TypeProgressing)
		if p.Message == "" || (len(msgs) > 0 && msgs[len(msgs)-1] == p.Message) {
			continue
		}
		msgs = append(msgs, p.Message)
		ord, ok := phaseOrder[phaseOf(p.Message)]
		if !ok {
			t.Fatalf("unexpected Progressing message %q; saw:\n%s", p.Message, describe(all))
		}
		if ord < last {
			t.Fatalf("phase %q after a later one; saw:\n%s", p.Message, describe(all))
		}
		last = ord
		if p.Status != metav1.ConditionTrue || p.Reason != ReasonSucceeded || p.ObservedGeneration != 1 {
			t.Fatalf("Progressing %+v, want True/Succeeded at generation 1", p)
		}
	}
	t.Logf("Progressing messages seen:\n  %s", strings.Join(msgs, "\n  "))
	if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "Resolving "+ref) }) {
		t.Errorf("no Resolving message in %q", msgs)
	}
	var pulls int
	for _, m := range msgs {
		if strings.HasPrefix(m, "Pulling "+shortDigest(digest)+" layer 1/1: ") && strings.HasSuffix(m, " kB") {
			pulls++
		}
	}
	// Byte counts of one layer are applied at most about once a second.
	var prev time.Time
	for _, v := range all {
		if m := v.cond(TypeProgressing).Message; strings.HasPrefix(m, "Pulling ") && !strings.Contains(m, ": 0.0/") {
			if !prev.IsZero() && v.at.Sub(prev) < 800*time.Millisecond {
				t.Errorf("byte counts %v apart, want about 1s:\n%s", v.at.Sub(prev), describe(all))
			}
			prev = v.at
		}
	}
	if pulls < 2 {
		t.Errorf("want at least 2 Pulling messages with byte counts while the layer streams for ~3 s, got %d in %q", pulls, msgs)
	}
	if want := "Published " + digest + " in "; !strings.HasPrefix(msgs[len(msgs)-1], want) {
		t.Errorf("last message %q, want prefix %q", msgs[len(msgs)-1], want)
	}
}

// checkServingFields checks what a published catalog's status says of
// the pointer: resolvedSource, urls, lastUnpacked, Serving, the label.
func checkServingFields(t *testing.T, r *registry, final seen, digest string) {
	t.Helper()
	ptr, _, err := catalog.Current(context.Background(), r.store, "phases")
	if err != nil {
		t.Fatal(err)
	}
	st := final.status
	if st.ResolvedSource == nil || st.ResolvedSource.Type != SourceTypeImage || st.ResolvedSource.Image == nil ||
		st.ResolvedSource.Image.Ref != r.proxy.Host+"/phases/catalog@"+digest {
		t.Errorf("resolvedSource %+v, want Image %s", st.ResolvedSource, r.proxy.Host+"/phases/catalog@"+digest)
	}
	if st.URLs == nil || st.URLs.Base != testBaseURL+"/catalogs/phases" {
		t.Errorf("urls %+v, want base %s/catalogs/phases", st.URLs, testBaseURL)
	}
	if st.LastUnpacked == nil || !st.LastUnpacked.Time.Equal(ptr.PublishedAt.Truncate(time.Second)) {
		t.Errorf("lastUnpacked %v, want the pointer's publish time %v", st.LastUnpacked, ptr.PublishedAt.Truncate(time.Second))
	}
	if sv := final.cond(TypeServing); sv.ObservedGeneration != 1 {
		t.Errorf("Serving observedGeneration %d, want 1", sv.ObservedGeneration)
	}
	if final.labels[MetadataNameLabel] != "phases" {
		t.Errorf("labels %v, want %s=phases", final.labels, MetadataNameLabel)
	}
}

// While the registry answers 503 the status says Retrying, soon after the
// first failure and without rewriting it at each retry; once the registry
// recovers the catalog is published.
func testRetrying(t *testing.T, c *cluster, r *registry) {
	ref, digest := r.push("flaky/catalog:v1", catalogImage(t, "tiny"))
	// 503 until recovery; then the first request is slow, so that the
	// attempt that succeeds runs longer than the quiet period.
	var mode atomic.Int32 // 0: failing, 1: recovering, 2: recovered
	r.proxy.Inject(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
		switch {
		case mode.Load() == 0:
			servers.Status(http.StatusServiceUnavailable)(w, req, next)
		case mode.CompareAndSwap(1, 2):
			servers.Delay(2*time.Second)(w, req, next)
		default:
			next.ServeHTTP(w, req)
		}
	}, 0, servers.ManifestHEAD, servers.ManifestGET)
	defer r.proxy.Clear()
	s := newService(t, c, r, only("flaky"))
	rec := record(t, c, "flaky")
	c.create(t, "flaky", ref)

	first := s.waitSyncs("flaky", 1, 30*time.Second)[0]
	if se, ok := pipeline.AsError(first.err); !ok || !se.Retryable {
		r.proxy.Clear()
		t.Fatalf("first sync: %v, want a retryable failure", first.err)
	}
	// Progressing (this replica's) and Serving (any replica's) are applied
	// by different field managers, so they may land in two writes.
	retrying, idx := rec.wait(30*time.Second, "Progressing True/Retrying and Serving False", func(v seen) bool {
		return isCond(v, TypeProgressing, metav1.ConditionTrue, ReasonRetrying) && v.cond(TypeServing).Status != ""
	})
	msg := retrying.cond(TypeProgressing).Message
	t.Logf("Retrying message: %q (%v after the first failure)", msg, retrying.at.Sub(first.at).Round(time.Millisecond))
	if !strings.HasPrefix(msg, string(pipeline.ReasonRegistry)+" while resolving: ") || !strings.Contains(msg, "503") || strings.Contains(msg, "->") {
		t.Errorf("Retrying message %q: want the reason, the phase and the 503", msg)
	}
	if sv := retrying.cond(TypeServing); sv.Status != metav1.ConditionFalse || sv.Reason != ReasonUnavailable {
		t.Errorf("Serving %s/%s while nothing is published, want False/Unavailable", sv.Status, sv.Reason)
	}

	// Several more retries fail the same way: nothing is written.
	applies := s.settledApplies()
	n := len(s.syncs("flaky"))
	s.waitSyncs("flaky", n+4, 30*time.Second)
	if all := rec.versions(); len(all) != idx+1 {
		t.Errorf("status rewritten between identical failures:\n%s", describe(all[idx:]))
	}
	if got := s.w.Stats().Applies; got != applies {
		t.Errorf("%d applies during identical retries, want none", got-applies)
	}

	// The registry recovers, slowly: the next attempt runs longer than the
	// quiet period, so it shows, still as a retry.
	mode.Store(1)
	checkRecovery(t, s, r, rec, retrying, digest)
}

// checkRecovery checks that once the registry answers again the running
// retry is shown as Retrying, then the catalog is published.
func checkRecovery(t *testing.T, s *service, r *registry, rec *recorder, retrying seen, digest string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			for _, q := range r.proxy.Requests() {
				t.Logf("proxy: %s %s %s -> %d", q.Method, q.Path, q.Class, q.Status)
			}
		}
	}()
	running, _ := rec.wait(30*time.Second, "a running retry", func(v seen) bool {
		return v.at.After(retrying.at) && strings.HasPrefix(v.cond(TypeProgressing).Message, "Resolving ")
	})
	if p := running.cond(TypeProgressing); p.Status != metav1.ConditionTrue || p.Reason != ReasonRetrying {
		t.Errorf("running retry shown as %s/%s, want True/Retrying", p.Status, p.Reason)
	}
	ok, _ := rec.wait(30*time.Second, "Succeeded and Serving", func(v seen) bool {
		return isCond(v, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded) &&
			isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) && strings.HasPrefix(v.cond(TypeProgressing).Message, "Published ")
	})
	if ok.status.ResolvedSource == nil || !strings.HasSuffix(ok.status.ResolvedSource.Image.Ref, "@"+digest) {
		t.Errorf("resolvedSource %+v, want digest %s", ok.status.ResolvedSource, digest)
	}
	t.Logf("%d syncs, %d status versions:\n%s", len(s.syncs("flaky")), len(rec.versions()), describe(rec.versions()))
}

// A digest-pinned image without the catalog label cannot become valid:
// Blocked. What was published before is still served.
func testBlocked(t *testing.T, c *cluster, r *registry) {
	good, goodDigest := r.push("pinned/good:v1", catalogImage(t, "tiny"))
	bad := catalogImage(t, "tiny")
	bad.Labels = nil
	_, badDigest := r.push("pinned/nolabel:v1", bad)
	badRef := r.proxy.Host + "/pinned/nolabel@" + badDigest

	s := newService(t, c, r, only("pinned", "pinned-fresh"))
	rec := record(t, c, "pinned")
	c.create(t, "pinned", good)
	rec.wait(30*time.Second, "Serving True", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable)
	})
	c.patchSpec(t, "pinned", map[string]any{"source": map[string]any{"image": map[string]any{"ref": badRef}}})
	blocked, _ := rec.wait(30*time.Second, "Progressing False/Blocked", func(v seen) bool {
		return isCond(v, TypeProgressing, metav1.ConditionFalse, ReasonBlocked)
	})
	p := blocked.cond(TypeProgressing)
	t.Logf("Blocked message: %q", p.Message)
	if p.ObservedGeneration != 2 || !strings.HasPrefix(p.Message, string(pipeline.ReasonMissingLabel)+" while pulling: ") || !strings.Contains(p.Message, imagebuild.ConfigsLabel) {
		t.Errorf("Progressing %+v: want generation 2 and the missing label", p)
	}
	sv := blocked.cond(TypeServing)
	if sv.Status != metav1.ConditionTrue || sv.Reason != ReasonAvailable || blocked.status.ResolvedSource == nil ||
		blocked.status.ResolvedSource.Image.Ref != r.proxy.Host+"/pinned/good@"+goodDigest {
		t.Errorf("Serving %s/%s resolvedSource %+v: the previous catalog should still be served", sv.Status, sv.Reason, blocked.status.ResolvedSource)
	}
	if !s.src.Available("pinned") {
		t.Error("Available(pinned) is false while the previous content is served")
	}
	// The status is written before the sync returns (its lease waits for it).
	if d := s.waitSyncs("pinned", 2, 30*time.Second); len(d) != 2 {
		t.Errorf("%d syncs, want 2", len(d))
	} else if se, ok := pipeline.AsError(d[1].err); !ok || se.Retryable {
		t.Errorf("second sync: %v, want a terminal failure", d[1].err)
	}

	// Never published: Blocked and not serving.
	rec2 := record(t, c, "pinned-fresh")
	c.create(t, "pinned-fresh", badRef)
	v, _ := rec2.wait(30*time.Second, "Blocked, Serving False/Unavailable", func(v seen) bool {
		return isCond(v, TypeProgressing, metav1.ConditionFalse, ReasonBlocked) && isCond(v, TypeServing, metav1.ConditionFalse, ReasonUnavailable)
	})
	if v.status.ResolvedSource != nil || v.status.URLs != nil || v.status.LastUnpacked != nil {
		t.Errorf("status %+v: nothing is served, so no resolvedSource, urls or lastUnpacked", v.status)
	}
}

// availabilityMode Unavailable stops serving, whether or not the catalog
// was published; switching back serves the stored content again.
func testUnavailable(t *testing.T, c *cluster, r *registry) {
	ref, _ := r.push("avail/catalog:v1", catalogImage(t, "tiny"))
	s := newService(t, c, r, only("off-from-start", "toggled"))

	rec := record(t, c, "off-from-start")
	c.create(t, "off-from-start", ref, unavailable)
	v, _ := rec.wait(15*time.Second, "Serving False/UserSpecifiedUnavailable", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionFalse, ReasonUserSpecifiedUnavailable)
	})
	if p := v.cond(TypeProgressing); p.Status != metav1.ConditionTrue || p.Reason != ReasonSucceeded || p.Message != msgUserUnavailable {
		t.Errorf("Progressing %+v, want True/Succeeded %q", p, msgUserUnavailable)
	}
	if s.src.Available("off-from-start") {
		t.Error("Available(off-from-start) is true")
	}
	for _, sc := range s.src.Catalogs() {
		if sc.Name == "off-from-start" {
			t.Error("an Unavailable catalog is in the set to sync")
		}
	}

	rec2 := record(t, c, "toggled")
	c.create(t, "toggled", ref)
	rec2.wait(30*time.Second, "Serving True", func(v seen) bool { return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) })
	c.patchSpec(t, "toggled", map[string]any{"availabilityMode": AvailabilityModeUnavailable})
	off, _ := rec2.wait(15*time.Second, "UserSpecifiedUnavailable", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionFalse, ReasonUserSpecifiedUnavailable)
	})
	if off.status.ResolvedSource != nil || off.status.URLs != nil || off.status.LastUnpacked != nil {
		t.Errorf("status %+v: a catalog not served has no resolvedSource, urls or lastUnpacked", off.status)
	}
	if sv := off.cond(TypeServing); sv.ObservedGeneration != 2 {
		t.Errorf("Serving observedGeneration %d, want 2", sv.ObservedGeneration)
	}
	if err := eventually(5*time.Second, func() error {
		if s.src.Available("toggled") {
			return errors.New("still available")
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	c.patchSpec(t, "toggled", map[string]any{"availabilityMode": AvailabilityModeAvailable})
	on, _ := rec2.wait(15*time.Second, "Serving True again at generation 3", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) && v.cond(TypeServing).ObservedGeneration == 3
	})
	if on.status.URLs == nil || !s.src.Available("toggled") {
		t.Errorf("back to Available: urls %+v, Available %v", on.status.URLs, s.src.Available("toggled"))
	}
}

// Deleting a ClusterCatalog stops serving it at once and leaves its
// content for the garbage collector.
func testDeleted(t *testing.T, c *cluster, r *registry) {
	ref, _ := r.push("gone/catalog:v1", catalogImage(t, "tiny"))
	s := newService(t, c, r, only("gone"))
	rec := record(t, c, "gone")
	c.create(t, "gone", ref)
	rec.wait(30*time.Second, "Serving True", func(v seen) bool { return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) })
	if names, ok := s.src.Names(); !ok || !slices.Contains(names, "gone") {
		t.Fatalf("Names() = %v, %v: want it to contain gone", names, ok)
	}
	changes := s.changeCount("gone")
	if err := c.res.Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, func() error {
		names, _ := s.src.Names()
		if s.src.Available("gone") || slices.Contains(names, "gone") {
			return fmt.Errorf("still there: Available %v, Names %v", s.src.Available("gone"), names)
		}
		if _, ok := s.src.Get("gone"); ok {
			return errors.New("Get still finds it")
		}
		// The informer drops the object from its store before it runs
		// the delete handler that calls OnChange.
		if s.changeCount("gone") == changes {
			return errors.New("OnChange not called yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := s.changeCount("gone"); n != changes+1 {
		t.Errorf("OnChange called %d times for the deletion, want once", n-changes)
	}
	if _, _, err := catalog.Current(context.Background(), r.store, "gone"); err != nil {
		t.Errorf("content gone with the object (%v): GC deletes it, not the Writer", err)
	}
}

// An apiserver outage during a sync does not hold the sync up; the status
// catches up once the apiserver is back.
func TestStatusCatchesUpAfterAPIServerOutage(t *testing.T) {
	c := startOwnCluster(t)
	r := startRegistry(t)
	img := catalogImage(t, "community-v4.21-3pkgs")
	ref, digest := r.push("outage/catalog:v1", img)
	// The layer takes about 15 s: stopping the apiserver takes up to 10,
	// and the sync must go on while it is gone.
	r.proxy.Inject(servers.Throttle(max(layerSize(t, img)/15, 1)), 0, servers.BlobGET)
	defer r.proxy.Clear()

	s := newService(t, c, r, only("outage"))
	rec := record(t, c, "outage")
	c.create(t, "outage", ref)
	rec.wait(20*time.Second, "Pulling", func(v seen) bool {
		return strings.HasPrefix(v.cond(TypeProgressing).Message, "Pulling ")
	})
	c.kube.Stop()
	stopped := time.Now()
	if len(s.syncs("outage")) > 0 {
		t.Fatal("the sync ended before the apiserver was down: nothing proven")
	}

	d := s.waitSyncs("outage", 1, time.Minute)[0]
	if d.err != nil || d.res.Digest != digest {
		t.Fatalf("sync during the outage: %v (digest %s), want published %s", d.err, d.res.Digest, digest)
	}
	if _, _, err := catalog.Current(context.Background(), r.store, "outage"); err != nil {
		t.Fatalf("not published during the outage: %v", err)
	}
	t.Logf("sync published %v after the apiserver was down", d.at.Sub(stopped).Round(time.Millisecond))
	if failures := s.w.Stats().Failures; failures == 0 {
		t.Errorf("no failed apply: the Writer did not try while the apiserver was down")
	}

	c.kube.Start()
	back := time.Now()
	var got object
	if err := eventually(20*time.Second, func() error {
		got = c.get(t, "outage")
		p, sv := got.status.Condition(TypeProgressing), got.status.Condition(TypeServing)
		if p == nil || p.Reason != ReasonSucceeded || !strings.HasPrefix(p.Message, "Published "+digest) ||
			sv == nil || sv.Status != metav1.ConditionTrue {
			return fmt.Errorf("status %+v", got.status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("status caught up %v after the apiserver was ready again", time.Since(back).Round(time.Millisecond))
	if got.status.ResolvedSource == nil || !strings.HasSuffix(got.status.ResolvedSource.Image.Ref, "@"+digest) {
		t.Errorf("resolvedSource %+v", got.status.ResolvedSource)
	}
}

// Serving is read from storage: a catalog published before the service
// started is reported Serving without a sync.
func TestServingFromStorageWithoutSync(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	ref, digest := r.push("prior/catalog:v1", catalogImage(t, "tiny"))
	if _, err := r.pl.Run(context.Background(), catalogspec.Catalog{Name: "prior", Image: catalogspec.ParseImage(ref)}); err != nil {
		t.Fatal(err)
	}
	c.create(t, "prior", ref)
	rec := record(t, c, "prior")
	// A Writer on a ClusterCatalogs whose OnChange syncs nothing.
	src := NewClusterCatalogs(c.dyn)
	w, err := NewWriter(c.dyn, src, r.store, testBaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { src.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	v, _ := rec.wait(15*time.Second, "Serving True", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable)
	})
	if v.status.ResolvedSource == nil || !strings.HasSuffix(v.status.ResolvedSource.Image.Ref, "@"+digest) {
		t.Errorf("resolvedSource %+v", v.status.ResolvedSource)
	}
	if v.status.Condition(TypeProgressing) != nil {
		t.Errorf("Progressing %+v without any sync", v.status.Condition(TypeProgressing))
	}
	// Removing the content (as if another replica's GC did) is seen on
	// the next event of the catalog: a spec change.
	if err := r.store.Delete(ctx, catalog.PointerKey("prior")); err != nil {
		t.Fatal(err)
	}
	c.patchSpec(t, "prior", map[string]any{"priority": 5})
	rec.wait(15*time.Second, "Serving False/Unavailable", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionFalse, ReasonUnavailable)
	})
}

// replicaWriter is one replica's ClusterCatalogs and Writer, with a clock
// the test moves ahead of the real one.
type replicaWriter struct {
	src    *ClusterCatalogs
	w      *Writer
	ahead  atomic.Int64 // nanoseconds added to time.Now
	cancel context.CancelFunc
}

func startReplicaWriter(t *testing.T, c *cluster, r *registry, replica string, opts ...WriterOption) *replicaWriter {
	t.Helper()
	rw := &replicaWriter{src: NewClusterCatalogs(c.dyn, WithClusterCatalogsLogger(testLogger(t)))}
	clock := func() time.Time { return time.Now().Add(time.Duration(rw.ahead.Load())) }
	opts = append([]WriterOption{WithWriterReplica(replica), WithWriterLogger(testLogger(t)), func(w *Writer) { w.now = clock }}, opts...)
	w, err := NewWriter(c.dyn, rw.src, r.store, testBaseURL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rw.w = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { rw.src.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	rw.cancel = sync.OnceFunc(func() { cancel(); <-done; <-done })
	t.Cleanup(rw.cancel)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := rw.src.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	return rw
}

// progressOwner is the Progressing condition's owner in rw's informer.
func (rw *replicaWriter) progressOwner(name string) string {
	o, _ := rw.src.get(name)
	return o.progressOwner.manager
}

// Two replicas on a real apiserver: while replica a reports a running
// sync, replica b's sync that finds the catalog up to date leaves a's
// report alone; once a's report is older than a lease (a died), b's end
// replaces it.
func TestUpToDateLeavesAnotherReplicasRunningSync(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	ref, digest := r.push("yield/catalog:v1", catalogImage(t, "tiny"))
	cat := catalogspec.Catalog{Name: "yield", Image: catalogspec.ParseImage(ref)}
	if _, err := r.pl.Run(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	c.create(t, "yield", ref)
	rec := record(t, c, "yield")
	a := startReplicaWriter(t, c, r, "a")
	// b's own sync is not shown running: its end is what is tested.
	b := startReplicaWriter(t, c, r, "b", WithQuietPeriod(time.Hour))

	a.w.Observe(pipeline.Event{Catalog: "yield", Phase: pipeline.PhaseResolving, Time: time.Now()})
	a.w.Observe(pipeline.Event{Catalog: "yield", Phase: pipeline.PhasePulling, Time: time.Now(), Digest: digest2,
		Layer: 1, Layers: 1, BytesDone: 1 << 20, BytesTotal: 3 << 20})
	running, _ := rec.wait(30*time.Second, "a's Pulling", func(v seen) bool { return phaseOf(v.cond(TypeProgressing).Message) == "Pulling" })
	if err := eventually(30*time.Second, func() error {
		if got := b.progressOwner("yield"); got != DefaultFieldManager+"/a" {
			return fmt.Errorf("b sees Progressing owned by %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	res, err := r.pl.Run(context.Background(), cat, b.w)
	if err != nil || res.Action != pipeline.ActionUpToDate {
		t.Fatalf("b's sync: %v %v, want UpToDate", res.Action, err)
	}
	// Wait until b's Writer has dealt with its end: held back, or written.
	if err := eventually(30*time.Second, func() error {
		b.w.mu.Lock()
		defer b.w.mu.Unlock()
		if en := b.w.entries["yield"]; en == nil || en.outcome == nil || (!en.yielded && en.flushed.Before(en.endedAt)) {
			return errors.New("b's end not dealt with")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := c.get(t, "yield"); (seen{status: got.status}).cond(TypeProgressing).Message != running.cond(TypeProgressing).Message {
		t.Fatalf("b's up-to-date end replaced a's running sync: Progressing owned by %s; saw:\n%s",
			got.progressOwner.manager, describe(rec.versions()))
	}

	// a dies; b's clock passes the lease's lifetime after a's last write.
	a.cancel()
	b.ahead.Store(int64(catalog.DefaultLeaseTTL + 2*time.Second))
	b.w.Refresh("yield")
	want := "Published " + digest + " (up to date)"
	rec.wait(30*time.Second, "b's end over a's stale report", func(v seen) bool { return v.cond(TypeProgressing).Message == want })
	if got := c.get(t, "yield").progressOwner.manager; got != DefaultFieldManager+"/b" {
		t.Errorf("Progressing owned by %q, want b", got)
	}
}
