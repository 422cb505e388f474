package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Fast tests of what the Writer puts in the status, on an in-memory
// cluster (fake_test.go); status_test.go has the same against a real
// apiserver.

func checkCond(t *testing.T, r *rig, typ string, status metav1.ConditionStatus, reason, msgPrefix string) metav1.Condition {
	t.Helper()
	c := r.cond(typ)
	if c.Status != status || c.Reason != reason || !strings.HasPrefix(c.Message, msgPrefix) {
		t.Fatalf("%s = %s/%s %q, want %s/%s %q…", typ, c.Status, c.Reason, c.Message, status, reason, msgPrefix)
	}
	return c
}

func published(r *rig, digest string, action pipeline.Action) {
	r.observe(pipeline.Event{Phase: pipeline.PhasePublished, Digest: digest,
		Result: &pipeline.Result{Digest: digest, Action: action, Duration: 1500 * time.Millisecond}})
}

func failed(r *rig, e *pipeline.Error) {
	r.observe(pipeline.Event{Phase: pipeline.PhaseFailed, Err: e})
}

// A first sync: each phase is shown as True/Succeeded, then the outcome,
// then Serving with resolvedSource, urls and lastUnpacked from the
// pointer.
func TestRenderFirstSync(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.mustWrite()
	checkCond(t, r, TypeServing, metav1.ConditionFalse, ReasonUnavailable, msgNotPublished)
	if st := r.fc.status(); st.ResolvedSource != nil || st.URLs != nil || st.LastUnpacked != nil {
		t.Fatalf("nothing published, yet the status has %+v", st)
	}
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Resolving "+testImage)
	r.observe(pipeline.Event{Phase: pipeline.PhaseValidating, Digest: digest1, Bundles: 3, Packages: 2})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Validating sha256:111111111111…: 3 bundles in 2 packages")

	at := r.clock().Add(700 * time.Millisecond) // lastUnpacked is in whole seconds
	r.fc.publish(digest1, at)
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	p := checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Published "+digest1+" in 1.5s")
	s := checkCond(t, r, TypeServing, metav1.ConditionTrue, ReasonAvailable, "Serving "+digest1+" from "+testImage)
	if p.ObservedGeneration != 1 || s.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d and %d, want 1", p.ObservedGeneration, s.ObservedGeneration)
	}
	st := r.fc.status()
	if st.ResolvedSource == nil || st.ResolvedSource.Type != SourceTypeImage || st.ResolvedSource.Image.Ref != "registry.test/cat@"+digest1 {
		t.Errorf("resolvedSource %+v, want the pointer's resolved ref", st.ResolvedSource)
	}
	if st.URLs == nil || st.URLs.Base != testBaseURL+"/catalogs/cat" {
		t.Errorf("urls %+v, want base %s/catalogs/cat", st.URLs, testBaseURL)
	}
	if st.LastUnpacked == nil || !st.LastUnpacked.Time.Equal(at.Truncate(time.Second)) {
		t.Errorf("lastUnpacked %v, want %v", st.LastUnpacked, at.Truncate(time.Second))
	}
	if r.w.Stats().Conflicts != 0 {
		t.Errorf("%d conflicts: a status apply used a resourceVersion older than the Writer's own label apply", r.w.Stats().Conflicts)
	}
}

// Byte counts of one layer are written at most once per MinInterval; a
// new layer or phase at once; nothing when nothing changed.
func TestRenderOneWritePerSecond(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.mustWrite()
	pull := func(layer int, done int64) {
		r.observe(pipeline.Event{Phase: pipeline.PhasePulling, Digest: digest1, Layer: layer, Layers: 2, BytesDone: done, BytesTotal: 4e6})
	}
	pull(1, 0)
	r.mustWrite()
	n := r.fc.statusApplies()
	r.advance(200 * time.Millisecond)
	pull(1, 1e6)
	if wait := r.mustWrite(); wait != 800*time.Millisecond {
		t.Errorf("asked to wait %v, want the rest of the second (800ms)", wait)
	}
	if got := r.fc.statusApplies(); got != n {
		t.Fatalf("%d applies within a second of the last byte count, want none", got-n)
	}
	r.advance(800 * time.Millisecond)
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Pulling sha256:111111111111… layer 1/2: 1.0/4.0 MB")
	if got := r.fc.statusApplies(); got != n+1 {
		t.Fatalf("%d applies after a second, want 1", got-n)
	}
	r.mustWrite()
	r.advance(5 * time.Second)
	r.mustWrite()
	if got := r.fc.statusApplies(); got != n+1 {
		t.Fatalf("%d applies with nothing new, want none", got-n-1)
	}
	r.advance(100 * time.Millisecond)
	pull(2, 0)
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Pulling sha256:111111111111… layer 2/2: 0.0/4.0 MB")
}

// A poll that finds the tag unchanged, within the quiet period of a
// settled catalog, writes nothing at all.
func TestRenderQuietPollWritesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	msg := r.cond(TypeProgressing).Message
	n := r.fc.statusApplies()
	r.advance(time.Minute)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	if wait := r.mustWrite(); wait <= 0 || wait > time.Second {
		t.Errorf("asked to wait %v for the quiet period, want (0, 1s]", wait)
	}
	r.advance(300 * time.Millisecond)
	published(r, digest1, pipeline.ActionUpToDate)
	r.mustWrite()
	if got := r.fc.statusApplies(); got != n {
		t.Errorf("%d applies for a poll that found nothing new, want none; Progressing %q", got-n, r.cond(TypeProgressing).Message)
	}
	if got := r.cond(TypeProgressing).Message; got != msg {
		t.Errorf("message %q, want the sync that did the work's %q", got, msg)
	}
}

// A retryable failure is True/Retrying with a readable message, and the
// next sync's phases say Retrying too; a terminal one (an invalid
// catalog) is False/Blocked, not Retrying.
func TestRenderRetryableAndTerminal(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	failed(r, &pipeline.Error{Phase: pipeline.PhaseResolving, Retryable: true, Reason: pipeline.ReasonRegistry, Err: errors.New("HEAD https://registry.test/v2/cat/manifests/v1:  503   Service Unavailable")})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonRetrying,
		string(pipeline.ReasonRegistry)+" while resolving: HEAD https://registry.test/v2/cat/manifests/v1: 503 Service Unavailable")
	if c := r.cond(TypeProgressing); strings.HasSuffix(c.Message, " ") {
		t.Errorf("message %q not tidied", c.Message)
	}
	r.advance(time.Second)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.advance(2 * time.Second) // past the quiet period
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonRetrying, "Resolving "+testImage)

	r.observe(pipeline.Event{Phase: pipeline.PhaseValidating, Digest: digest1})
	failed(r, &pipeline.Error{Phase: pipeline.PhaseValidating, Retryable: false, Reason: pipeline.ReasonInvalidCatalog, Err: errors.New(`package "a": duplicate bundle "a.v1"`)})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionFalse, ReasonBlocked,
		string(pipeline.ReasonInvalidCatalog)+` while validating: package "a": duplicate bundle "a.v1"`)
	checkCond(t, r, TypeServing, metav1.ConditionFalse, ReasonUnavailable, msgNotPublished)
}

// A failure message is cut to maxMessage bytes on a rune boundary.
func TestRenderTruncatesMessages(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	failed(r, &pipeline.Error{Phase: pipeline.PhasePulling, Retryable: true, Reason: pipeline.ReasonRegistry, Err: errors.New(strings.Repeat("é", 5000))})
	r.mustWrite()
	c := checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonRetrying, string(pipeline.ReasonRegistry)+" while pulling: éé")
	if len(c.Message) > maxMessage || len(c.Message) < maxMessage-8 || !utf8.ValidString(c.Message) {
		t.Errorf("message of %d bytes (valid UTF-8: %v), want about %d", len(c.Message), utf8.ValidString(c.Message), maxMessage)
	}
}

// While a new digest is being published, and after its pointer swap
// failed, Serving, resolvedSource and lastUnpacked still name what the
// pointer names: the old digest, or nothing.
func TestRenderServingWaitsForPublish(t *testing.T) {
	t.Parallel()
	for _, before := range []bool{true, false} {
		r := newRig(t)
		var old *Status
		if before {
			r.fc.publish(digest1, r.clock())
			r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
			published(r, digest1, pipeline.ActionPublished)
			r.mustWrite()
			old = r.fc.status()
		}
		checkServing := func(when string) {
			t.Helper()
			st := r.fc.status()
			sv := st.Condition(TypeServing)
			if sv == nil || strings.Contains(sv.Message, digest2) || strings.Contains(jsonOf(st.ResolvedSource), digest2) {
				t.Fatalf("%s: status names the unpublished digest: %s", when, jsonOf(st))
			}
			if old != nil && (sv.Message != old.Condition(TypeServing).Message || jsonOf(st.ResolvedSource) != jsonOf(old.ResolvedSource) ||
				!st.LastUnpacked.Equal(old.LastUnpacked)) {
				t.Fatalf("%s: serving fields moved from\n%s\nto\n%s", when, jsonOf(old), jsonOf(st))
			}
			if old == nil && (sv.Reason != ReasonUnavailable || st.ResolvedSource != nil || st.LastUnpacked != nil || st.URLs != nil) {
				t.Fatalf("%s: nothing was ever published, yet: %s", when, jsonOf(st))
			}
		}
		r.advance(time.Minute)
		r.edit(func(c *ClusterCatalog) { c.Image = catalogspec.ParseImage("registry.test/cat:v2") })
		r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
		r.observe(pipeline.Event{Phase: pipeline.PhasePublishing, Digest: digest2})
		r.advance(2 * time.Second)
		r.mustWrite()
		checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Publishing sha256:222222222222…")
		checkServing("publishing")
		r.observe(pipeline.Event{Phase: pipeline.PhaseFailed, Digest: digest2, Err: &pipeline.Error{Phase: pipeline.PhasePublishing,
			Retryable: true, Reason: pipeline.ReasonStorage, Err: errors.New("swap pointer: precondition failed")}})
		r.advance(2 * time.Second)
		r.mustWrite()
		checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonRetrying, string(pipeline.ReasonStorage)+" while publishing: swap pointer")
		checkServing("after the failed swap")
	}
}

// availabilityMode Unavailable: Serving False/UserSpecifiedUnavailable
// with no URL, Progressing True/Succeeded, though content is published.
func TestRenderUserSpecifiedUnavailable(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	checkCond(t, r, TypeServing, metav1.ConditionTrue, ReasonAvailable, "Serving "+digest1)
	r.edit(func(c *ClusterCatalog) { c.AvailabilityMode = AvailabilityModeUnavailable })
	r.mustWrite()
	s := checkCond(t, r, TypeServing, metav1.ConditionFalse, ReasonUserSpecifiedUnavailable, msgUserUnavailable)
	p := checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, msgUserUnavailable)
	if s.ObservedGeneration != 2 || p.ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d and %d, want 2", s.ObservedGeneration, p.ObservedGeneration)
	}
	if st := r.fc.status(); st.URLs != nil || st.ResolvedSource != nil {
		t.Errorf("an Unavailable catalog has %s", jsonOf(st))
	}
}

// A failed apply is the Writer's to retry: Observe and Flush do not wait
// for it beyond the sync's context, the sync's end is written once the
// apiserver answers again, and only once.
func TestRenderFailedApplyDoesNotHoldTheSync(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.fc.setFail(apierrors.NewServiceUnavailable("etcd is away"))
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	if _, err := r.write(); err == nil {
		t.Fatal("write succeeded while every apply fails")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r.w.Flush(ctx, "cat", time.Time{}) // returns once ctx ends: the sync goes on
	if s := r.w.Stats(); s.Failures == 0 || s.Applies != 0 {
		t.Fatalf("stats %+v, want failures and no applies", s)
	}
	r.fc.setFail(nil)
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Published "+digest1)
	checkCond(t, r, TypeServing, metav1.ConditionTrue, ReasonAvailable, "Serving "+digest1)
	n := r.fc.statusApplies()
	r.advance(time.Minute)
	r.mustWrite()
	if got := r.fc.statusApplies(); got != n {
		t.Errorf("%d more applies after the end was written, want none", got-n)
	}
}

// A status changed by someone else since it was read is refused, not
// overwritten; the next write starts from the current object.
func TestRenderConflictIsRecomputed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	r.fc.touch() // another writer: a new resourceVersion
	r.observe(pipeline.Event{Phase: pipeline.PhaseUnpacking, Digest: digest1})
	if _, err := r.write(); !errors.Is(err, errConflict) {
		t.Fatalf("write on a stale resourceVersion: %v, want errConflict", err)
	}
	r.w.sourceEvent("cat") // the informer brings the new version
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Unpacking sha256:111111111111…")
	if s := r.w.Stats(); s.Conflicts != 1 || s.Failures != 0 {
		t.Errorf("stats %+v, want 1 conflict and no failures", s)
	}
}

// A wait for a sync slot is shown (a wait on a lease whose holder renews
// it is not: the holder reports the catalog), and the sync that follows a
// shown wait is shown at once, not after the quiet period.
func TestRenderWaitIsShown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	n := r.fc.statusApplies()
	r.advance(time.Minute)
	r.w.ObserveWait(pipeline.Wait{Catalog: "cat", Reason: pipeline.WaitLease, Holder: "r2", Time: r.clock()})
	r.mustWrite()
	if got := r.fc.statusApplies(); got != n {
		t.Fatalf("%d applies for a wait on a live lease holder, want none; Progressing %q", got-n, r.cond(TypeProgressing).Message)
	}
	r.w.ObserveWait(pipeline.Wait{Catalog: "cat", Reason: pipeline.WaitSlot, Detail: "4 of 4 in use", Time: r.clock()})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Waiting for a free sync slot (4 of 4 in use)")
	r.advance(5 * time.Second)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	if wait := r.mustWrite(); wait != 0 {
		t.Errorf("asked to wait %v after a shown wait, want 0", wait)
	}
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Resolving "+testImage)
}

// A Writer that cannot read the pointer keeps the serving fields the
// status has, rather than dropping them from its apply.
func TestRenderUnreadablePointerKeepsServing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	before := r.fc.status()
	r.fc.setPointerErr(errors.New("storage is away"))
	r2 := newRigOn(t, r.fc)
	r2.advance(time.Minute)
	r2.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	if wait := r2.mustWrite(); wait <= 0 {
		t.Errorf("asked to wait %v after a failed pointer read, want a retry delay", wait)
	}
	checkCond(t, r2, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Resolving "+testImage)
	after := r2.fc.status()
	if !sameServing(before, after) {
		t.Errorf("serving fields changed from\n%s\nto\n%s", jsonOf(before), jsonOf(after))
	}
}

// A new layer is a new state, written at once; byte counts of one layer
// wait for the rest of the second.
func TestRenderNewLayerWrittenAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.mustWrite()
	r.observe(pipeline.Event{Phase: pipeline.PhasePulling, Digest: digest1, Layer: 1, Layers: 2, BytesDone: 4e6, BytesTotal: 4e6})
	r.mustWrite()
	r.advance(100 * time.Millisecond)
	r.observe(pipeline.Event{Phase: pipeline.PhasePulling, Digest: digest1, Layer: 2, Layers: 2, BytesDone: 0, BytesTotal: 4e6})
	if wait := r.mustWrite(); wait != 0 {
		t.Errorf("asked to wait %v for a new layer", wait)
	}
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Pulling sha256:111111111111… layer 2/2: 0.0/4.0 MB")
}

// A spec edited while a sync runs is not claimed observed by that sync:
// its Progressing condition keeps the generation it started on.
func TestRenderAttemptKeepsItsGeneration(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	gen := r.cond(TypeProgressing).ObservedGeneration
	r.edit(func(c *ClusterCatalog) { c.Image = catalogspec.ParseImage("registry.test/cat:v2") })
	r.advance(2 * time.Second)
	r.observe(pipeline.Event{Phase: pipeline.PhasePulling, Digest: digest1, Layer: 1, Layers: 1, BytesDone: 1, BytesTotal: 4e6})
	r.mustWrite()
	if c := r.cond(TypeProgressing); c.ObservedGeneration != gen || !strings.HasPrefix(c.Message, "Pulling") {
		t.Fatalf("Progressing %q at generation %d, want the running attempt's %d", c.Message, c.ObservedGeneration, gen)
	}
}

// The metadata.name label is set where it is missing, once; a restarted
// writer finds it there and applies nothing.
func TestRenderLabelSetOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.mustWrite()
	r.mustWrite()
	r.fc.mu.Lock()
	label, n := r.fc.labels[MetadataNameLabel], r.fc.labelApplies
	r.fc.mu.Unlock()
	if label != "cat" || n != 1 || r.w.Stats().Labels != 1 {
		t.Fatalf("label %q after %d applies (%d counted), want \"cat\" after 1", label, n, r.w.Stats().Labels)
	}
	r = newRigOn(t, r.fc)
	r.mustWrite()
	r.fc.mu.Lock()
	defer r.fc.mu.Unlock()
	if r.fc.labelApplies != 1 {
		t.Fatalf("a restarted writer applied the label again (%d applies)", r.fc.labelApplies)
	}
}

// A lease wait that is not stalled clears only a shown lease wait, not a
// wait of another kind.
func TestRenderLeaseWaitKeepsSlotWait(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.w.ObserveWait(pipeline.Wait{Catalog: "cat", Reason: pipeline.WaitSlot, Detail: "4 of 4 in use", Time: r.clock()})
	r.w.ObserveWait(pipeline.Wait{Catalog: "cat", Reason: pipeline.WaitLease, Holder: "r2", Time: r.clock()})
	r.mustWrite()
	checkCond(t, r, TypeProgressing, metav1.ConditionTrue, ReasonSucceeded, "Waiting for a free sync slot (4 of 4 in use)")
}

// A restarted writer reads from the status that the last sync ended at
// the current generation: its first quiet poll writes nothing either.
func TestRenderQuietPollAfterRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	r = newRigOn(t, r.fc)
	r.mustWrite()
	n := r.fc.statusApplies()
	r.advance(time.Minute)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	r.advance(300 * time.Millisecond)
	published(r, digest1, pipeline.ActionUpToDate)
	r.mustWrite()
	if got := r.fc.statusApplies(); got != n {
		t.Errorf("%d applies for a quiet poll after a restart, want none; Progressing %q", got-n, r.cond(TypeProgressing).Message)
	}
}

// The informer's echo of our own apply is not news: no pointer read, no
// apply; another writer's change is.
func TestRenderOwnEchoIgnored(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	reads := func() int {
		r.fc.mu.Lock()
		defer r.fc.mu.Unlock()
		return r.fc.ptrReads
	}
	n, applies := reads(), r.fc.statusApplies()
	r.w.sourceEvent("cat")
	r.mustWrite()
	if reads() != n || r.fc.statusApplies() != applies {
		t.Fatalf("our own apply's echo cost %d pointer reads and %d applies", reads()-n, r.fc.statusApplies()-applies)
	}
	r.fc.touch()
	r.w.sourceEvent("cat")
	r.mustWrite()
	if reads() != n+1 {
		t.Fatalf("another writer's change cost %d pointer reads, want 1", reads()-n)
	}
}

// A label that cannot be set does not hold the status back; it is tried
// again after a backoff that grows with each failure.
func TestRenderLabelBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.mu.Lock()
	r.fc.labelErr = apierrors.NewForbidden(schema.GroupResource{Resource: "clustercatalogs"}, "cat", errors.New("no patch"))
	r.fc.mu.Unlock()
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		wait := r.mustWrite()
		if wait < want*8/10 || wait > want*12/10 {
			t.Fatalf("failure %d: retry in %v, want %v ±20%%", i+1, wait, want)
		}
		r.advance(wait)
	}
	if r.fc.statusApplies() == 0 {
		t.Fatal("the failing label held the status back")
	}
}

// A pointer that cannot be read is tried again after a backoff that
// grows with each failure.
func TestRenderPointerBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.setPointerErr(errors.New("store unavailable"))
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		wait := r.mustWrite()
		if wait < want*8/10 || wait > want*12/10 {
			t.Fatalf("failure %d: retry in %v, want %v ±20%%", i+1, wait, want)
		}
		r.advance(wait)
	}
}

// An end Flush could not wait for is written late only if nobody else
// wrote the Progressing condition meanwhile: the next lease holder's
// word is newer.
func TestRenderLateEnd(t *testing.T) {
	t.Parallel()
	for _, other := range []bool{false, true} {
		r := newRig(t)
		r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
		r.mustWrite()
		published(r, digest1, pipeline.ActionPublished)
		over, stop := context.WithCancel(context.Background())
		stop()
		r.w.Flush(over, "cat", r.clock())
		want := "Published " + digest1
		if other {
			want = "Resolving by the next holder"
			applyAs(t, r.fc, DefaultFieldManager+"/r2", metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
				Reason: ReasonSucceeded, Message: want})
			r.w.sourceEvent("cat")
		}
		r.mustWrite()
		if got := r.cond(TypeProgressing).Message; !strings.HasPrefix(got, want) {
			t.Errorf("another writer %v: Progressing %q, want %q", other, got, want)
		}
	}
}

// A first status whose sync found the catalog up to date (published by an
// earlier process, no Progressing condition yet) says so.
func TestRenderUpToDateFirstStatus(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionUpToDate)
	r.mustWrite()
	if c := r.cond(TypeProgressing); c.Reason != ReasonSucceeded || !strings.Contains(c.Message, shortDigest(digest1)) && !strings.Contains(c.Message, digest1) {
		t.Fatalf("Progressing %s %q", c.Reason, c.Message)
	}
}

// A failed Serving apply is the step's error, retried, not swallowed.
func TestRenderServingApplyFailure(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.fc.mu.Lock()
	r.fc.failFor = map[string]error{DefaultFieldManager: apierrors.NewServiceUnavailable("etcd is away")}
	r.fc.mu.Unlock()
	if _, err := r.write(); err == nil {
		t.Fatal("a failed Serving apply went unreported")
	}
	if st := r.w.Stats(); st.Failures != 1 || st.Conflicts != 0 {
		t.Fatalf("stats %+v, want one failure", st)
	}
}

// With the pointer unreadable, a status another replica moved to a newer
// digest is not moved back to the digest of an old pointer read.
func TestRenderStalePointerDoesNotMoveServingBack(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fc.publish(digest1, r.clock())
	r.mustWrite()
	r.advance(time.Minute)
	r.fc.publish(digest2, r.clock())
	applyAs(t, r.fc, DefaultFieldManager, metav1.Condition{Type: TypeServing, Status: metav1.ConditionTrue,
		Reason: ReasonAvailable, Message: "Serving " + digest2 + " from " + testImage})
	r.fc.setPointerErr(errors.New("store unavailable"))
	r.w.sourceEvent("cat")
	for range 3 {
		r.w.write(context.Background(), "cat") //nolint:errcheck // the pointer read fails; the status is what is checked
	}
	if got := r.cond(TypeServing).Message; !strings.Contains(got, digest2) {
		t.Fatalf("Serving moved back: %q", got)
	}
}

// An up-to-date poll keeps the message of the sync that did the work only
// when that message is a success of this generation naming this digest.
// A running sync reported by this replica's earlier process is over and
// is replaced; one reported by another replica just now is left to it.
func TestRenderUpToDateKeepsOnlyItsOwnMessage(t *testing.T) {
	t.Parallel()
	upToDate := "Published " + digest1 + " (up to date)"
	for _, tc := range []struct {
		name, by, reason, msg string
		gen                   int64
		want                  string
	}{
		{"the work's message", "r1", ReasonSucceeded, "Published " + digest1 + " in 2.0s", 1, "Published " + digest1 + " in 2.0s"},
		{"another digest", "r1", ReasonSucceeded, "Published " + digest2 + " in 2.0s", 1, upToDate},
		{"a failure", "r1", ReasonRetrying, "Published " + digest1 + " in 2.0s", 1, upToDate},
		{"an older generation", "r1", ReasonSucceeded, "Published " + digest1 + " in 2.0s", 0, upToDate},
		{"not a success message", "r1", ReasonSucceeded, "Pulling " + digest1, 1, upToDate},
		{"another replica's work", "r2", ReasonSucceeded, "Published " + digest1 + " in 2.0s", 1, "Published " + digest1 + " in 2.0s"},
		{"another replica's running sync", "r2", ReasonSucceeded, "Pulling " + digest1, 1, "Pulling " + digest1},
	} {
		r := newRig(t)
		applyAs(t, r.fc, DefaultFieldManager+"/"+tc.by, metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
			Reason: tc.reason, Message: tc.msg, ObservedGeneration: tc.gen})
		r.fc.publish(digest1, r.clock())
		r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
		published(r, digest1, pipeline.ActionUpToDate)
		r.mustWrite()
		if got := r.cond(TypeProgressing).Message; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// An up-to-date sync's end waits while another replica's report of a
// running sync is younger than a lease (that replica is alive and writes
// its own end), without holding the lease; once the report is older, its
// replica is gone and the end replaces it. An end that replica reports
// meanwhile makes this one old news.
func TestRenderUpToDateYieldsToAnotherReplicasRunningSync(t *testing.T) {
	t.Parallel()
	const pulling = "Pulling sha256:222222222222… layer 1/1: 1.0/3.0 MB"
	for _, otherEnds := range []bool{false, true} {
		r := newRig(t)
		r.fc.publish(digest1, r.clock())
		applyAs(t, r.fc, DefaultFieldManager+"/r2", metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
			Reason: ReasonSucceeded, Message: pulling, ObservedGeneration: 1})
		start := r.clock()
		r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
		r.advance(300 * time.Millisecond)
		published(r, digest1, pipeline.ActionUpToDate)
		wait := r.mustWrite()
		if got := r.cond(TypeProgressing).Message; got != pulling {
			t.Fatalf("Progressing %q over another replica's running sync, want its %q", got, pulling)
		}
		if ttl := catalog.DefaultLeaseTTL; wait <= ttl-2*time.Second || wait > ttl {
			t.Errorf("asked to look again in %v, want when the report is a lease old (%v)", wait, ttl)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if r.w.Flush(ctx, "cat", start); ctx.Err() != nil {
			t.Fatal("Flush held the lease for an end that waits for another replica")
		}
		cancel()
		want := "Published " + digest1 + " (up to date)"
		if otherEnds {
			want = "Published " + digest2 + " in 4.0s"
			r.fc.publish(digest2, r.clock())
			applyAs(t, r.fc, DefaultFieldManager+"/r2", metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
				Reason: ReasonSucceeded, Message: want, ObservedGeneration: 1})
			r.w.sourceEvent("cat")
		}
		r.advance(wait)
		r.mustWrite()
		if got := r.cond(TypeProgressing).Message; got != want {
			t.Errorf("other replica ends %v: Progressing %q a lease later, want %q", otherEnds, got, want)
		}
	}
}

// Once the end of a sync is on the status, another writer's later
// Progressing stands: the old end is not written again over it.
func TestRenderWrittenEndNotRepeated(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	r.mustWrite()
	const next = "Resolving by the next holder"
	applyAs(t, r.fc, DefaultFieldManager+"/r2", metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
		Reason: ReasonSucceeded, Message: next})
	r.w.sourceEvent("cat")
	r.advance(2 * time.Second)
	r.mustWrite()
	if got := r.cond(TypeProgressing).Message; got != next {
		t.Fatalf("Progressing %q, want the next holder's %q", got, next)
	}
}

// digestOf reads the resolved reference, "" for any part missing.
func TestDigestOf(t *testing.T) {
	ref := "registry.test/cat@" + digest1
	for _, tc := range []struct {
		s    *Status
		want string
	}{
		{nil, ""},
		{&Status{}, ""},
		{&Status{ResolvedSource: &ResolvedSource{Type: SourceTypeImage}}, ""},
		{&Status{ResolvedSource: &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{Ref: ref}}}, ref},
	} {
		if got := digestOf(tc.s); got != tc.want {
			t.Errorf("digestOf(%s) = %q, want %q", jsonOf(tc.s), got, tc.want)
		}
	}
}

// A failed sync's Retrying is applied before the published pointer is
// read again: a hung store, whose reads wait out their timeout, must not
// hold back the news of the failure it caused.
func TestRenderRetryingBeforePointerRead(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	var atRead []string
	r.fc.onPointer = func() { atRead = append(atRead, r.cond(TypeProgressing).Reason) }
	failed(r, &pipeline.Error{Phase: pipeline.PhasePulling, Reason: pipeline.ReasonStorage, Retryable: true,
		Err: errors.New("server stalled: no response in 2s")})
	r.mustWrite()
	if len(atRead) == 0 || atRead[0] != ReasonRetrying {
		t.Fatalf("Progressing at the pointer reads after the failure: %q, want %s first", atRead, ReasonRetrying)
	}
	if got := r.cond(TypeProgressing); got.Reason != ReasonRetrying || !strings.Contains(got.Message, "server stalled") {
		t.Fatalf("Progressing %s: %s", got.Reason, got.Message)
	}
}
