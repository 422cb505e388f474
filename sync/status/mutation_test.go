package status

// Tests written for the mutants gremlins found alive (docs/testing.md).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// Each unit starts at its exact size; an unknown total (0) prints done
// alone; twelve hex digits are not cut.
func TestMessageBoundaries(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{
		{1_000_000_000, 1_000_000_000, "1.0/1.0 GB"},
		{999_999_999, 999_999_999, "1000.0/1000.0 MB"},
		{1_000_000, 1_000_000, "1.0/1.0 MB"},
		{1_000, 1_000, "1.0/1.0 kB"},
		{999, 999, "999/999 B"},
		{2_000_000, 0, "2.0 MB"},
		{512, 0, "512 B"},
		{512, -1, "512 B"},
	} {
		if got := byteProgress(tc.done, tc.total); got != tc.want {
			t.Errorf("byteProgress(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	if got := shortDigest("sha256:0123456789ab"); got != "sha256:0123456789ab" {
		t.Errorf("12 hex digits cut: %q", got)
	}
	if got := shortDigest("sha256:0123456789abc"); got != "sha256:0123456789ab…" {
		t.Errorf("13 hex digits: %q", got)
	}
	if got := seconds(time.Minute); got != "1m0s" {
		t.Errorf("a minute: %q", got)
	}
	if got := seconds(time.Minute - time.Second/10); got != "59.9s" {
		t.Errorf("just under a minute: %q", got)
	}
}

// The temp folder the process uses is scrubbed from messages wherever it
// is; a temp folder of "/" adds nothing (it would match every path).
func TestTempDirPatternFollowsTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", "/work/spool")
	if re := tempDirPattern(); !re.MatchString("open /work/spool/x1/catalog.jsonl") || !re.MatchString("/tmp/a") {
		t.Errorf("%s misses the temp folder", re)
	}
	t.Setenv("TMPDIR", "/")
	if re := tempDirPattern(); re.MatchString("open /etc/catalog.jsonl") {
		t.Errorf("%s with TMPDIR=/ matches any path", re)
	}
}

// managedBy: catalogd's finalizer or a status field manager named after
// catalogd marks the object as catalogd's; the Progressing condition's
// owner is whoever applied it, else the first that updated it.
func TestManagedBy(t *testing.T) {
	fields := metav1.NewFieldsV1
	progressing := fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Progressing\"}":{}}}}`)
	for _, tc := range []struct {
		name       string
		finalizers []string
		mf         []metav1.ManagedFieldsEntry
		other      string
		owner      string
	}{
		{name: "plain"},
		{name: "finalizer", finalizers: []string{"example.test/x", CatalogdFinalizer}, other: "finalizer " + CatalogdFinalizer},
		{name: "catalogd status manager", mf: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{}`)},
			{Manager: "catalogd-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
		}, other: "status field manager catalogd-controller-manager", owner: "catalogd-controller-manager"},
		{name: "catalogd spec manager only", mf: []metav1.ManagedFieldsEntry{
			{Manager: "catalogd", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{}`)},
		}},
		{name: "finalizer named first", finalizers: []string{CatalogdFinalizer}, mf: []metav1.ManagedFieldsEntry{
			{Manager: "catalogd", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{}`)},
		}, other: "finalizer " + CatalogdFinalizer},
		{name: "apply wins", mf: []metav1.ManagedFieldsEntry{
			{Manager: "first", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "catalogsync", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: progressing},
			{Manager: "third", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "nofields", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
		}, owner: "catalogsync"},
		{name: "first update owns", mf: []metav1.ManagedFieldsEntry{
			{Manager: "nofields", Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: "first", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
			{Manager: "second", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: progressing},
		}, owner: "first"},
	} {
		u := &unstructured.Unstructured{}
		u.SetFinalizers(tc.finalizers)
		u.SetManagedFields(tc.mf)
		other, owner := managedBy(u)
		if other != tc.other || owner != tc.owner {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.name, other, owner, tc.other, tc.owner)
		}
	}
}

// RESTConfig reads a kubeconfig's current context as kubectl does:
// relative file names beside the file, exec plugins never interactive,
// and refuses what it cannot honour.
func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "apiVersion: v1\nkind: Config\n"
	good := write("good", head+`current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}, {name: other, context: {cluster: none}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt, tls-server-name: api}}]
users: [{name: u, user: {client-certificate: /abs/u.crt, client-key: keys/u.key, tokenFile: tok, exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}}}]
`)
	cfg, err := RESTConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.CAFile != filepath.Join(dir, "ca.crt") || cfg.CertFile != "/abs/u.crt" ||
		cfg.KeyFile != filepath.Join(dir, "keys/u.key") || cfg.BearerTokenFile != filepath.Join(dir, "tok") || cfg.ServerName != "api" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.QPS != defaultQPS || cfg.Burst != defaultBurst || cfg.UserAgent != "catalogsync" {
		t.Errorf("QPS %v burst %d agent %q", cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
	if ex := cfg.ExecProvider; ex == nil || !ex.StdinUnavailable || ex.InteractiveMode != "Never" || ex.Command != "get-token" {
		t.Errorf("exec %+v", ex)
	}
	for name, body := range map[string]string{
		"no context":    head + "current-context: missing\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no cluster":    head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n",
		"no server":     head + "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, cluster: {}}]\n",
		"auth-provider": head + "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: https://x}}]\nusers: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
		"not yaml":      "{",
	} {
		if _, err := RESTConfig(write(name, body)); !errors.Is(err, ErrKubeconfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := RESTConfig(filepath.Join(dir, "absent")); !errors.Is(err, ErrKubeconfig) {
		t.Errorf("absent: %v", err)
	}
	// No kubeconfig means the pod's service account, which a test is not.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := RESTConfig(""); err == nil || !strings.Contains(err.Error(), "in-cluster") {
		t.Errorf("in-cluster outside a cluster: %v", err)
	}
	// A user the context does not name is no user: no credentials.
	cfg, err = RESTConfig(write("nouser", head+"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: gone}}]\nclusters: [{name: k, cluster: {server: https://x}}]\n"))
	if err != nil || cfg.BearerToken != "" || cfg.ExecProvider != nil {
		t.Errorf("no user: %v %+v", err, cfg)
	}
}

// The Progressing condition is applied by this replica's own field
// manager, named after WithWriterReplica.
func TestProgressManagerNamesReplica(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	r.fc.mu.Lock()
	owners := slices.Clone(r.fc.owners)
	r.fc.mu.Unlock()
	if want := DefaultFieldManager + "/r1"; !slices.Contains(owners, want) {
		t.Fatalf("managers %v, want %s among them", owners, want)
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
	r.edit(func(c *Catalog) { c.Image = "registry.test/cat:v2" })
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

// Flush returns once the end of the sync is on the status: at once for a
// catalog it does not know, not for a sync that ended before since; an
// end it could not wait for is marked late.
func TestFlush(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Minute)
	}
	ctx, cancel := bounded()
	defer cancel()
	if r.w.Flush(ctx, "unknown", r.clock()); ctx.Err() != nil {
		t.Fatal("Flush waited for a catalog it does not know")
	}
	start := r.clock()
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	published(r, digest1, pipeline.ActionPublished)
	over, stop := context.WithCancel(context.Background())
	stop()
	r.w.Flush(over, "cat", start)
	r.w.mu.Lock()
	late := r.w.entries["cat"].late
	r.w.mu.Unlock()
	if !late {
		t.Error("an end Flush could not wait for is not marked late")
	}
	r.mustWrite()
	ctx, cancel = bounded()
	defer cancel()
	if r.w.Flush(ctx, "cat", start); ctx.Err() != nil {
		t.Fatal("Flush did not see the written end of the sync")
	}
	// While a sync runs, an end not waited for is not late: the sync
	// itself will write its end.
	r.advance(time.Second)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.w.Flush(over, "cat", r.clock())
	r.w.mu.Lock()
	late = r.w.entries["cat"].late
	r.w.mu.Unlock()
	if late {
		t.Error("Flush marked a running sync's end late")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r.w.Flush(ctx, "cat", start.Add(time.Second)); ctx.Err() == nil {
		t.Fatal("Flush returned for the end of an older sync")
	}
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

// An outage warns at its first failure and at every 20th; the others are
// debug lines.
func TestLogFailureEvery20th(t *testing.T) {
	var buf bytes.Buffer
	w := &Writer{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for n := 1; n <= 45; n++ {
		w.logFailure(context.Background(), n, "read published pointer")
	}
	if got := strings.Count(buf.String(), "level=WARN"); got != 3 || !strings.Contains(buf.String(), "failures=40") {
		t.Fatalf("%d warnings, want 3 (failures 1, 20, 40):\n%s", got, buf.String())
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

// soonest keeps the shortest positive wait.
func TestSoonest(t *testing.T) {
	var s soonest
	for _, d := range []time.Duration{0, 3 * time.Second, -time.Second, time.Second, 2 * time.Second, 0} {
		s.add(d)
	}
	if time.Duration(s) != time.Second {
		t.Fatalf("soonest %v, want 1s", time.Duration(s))
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
func TestRenderUpToDateKeepsOnlyItsOwnMessage(t *testing.T) {
	t.Parallel()
	upToDate := "Published " + digest1 + " (up to date)"
	for _, tc := range []struct {
		name, reason, msg string
		gen               int64
		want              string
	}{
		{"the work's message", ReasonSucceeded, "Published " + digest1 + " in 2.0s", 1, "Published " + digest1 + " in 2.0s"},
		{"another digest", ReasonSucceeded, "Published " + digest2 + " in 2.0s", 1, upToDate},
		{"a failure", ReasonRetrying, "Published " + digest1 + " in 2.0s", 1, upToDate},
		{"an older generation", ReasonSucceeded, "Published " + digest1 + " in 2.0s", 0, upToDate},
		{"not a success message", ReasonSucceeded, "Pulling " + digest1, 1, upToDate},
	} {
		fc := newFakeCluster("cat", testImage)
		applyAs(t, fc, DefaultFieldManager+"/r1", metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue,
			Reason: tc.reason, Message: tc.msg, ObservedGeneration: tc.gen})
		r := newRigOn(t, fc)
		r.fc.publish(digest1, r.clock())
		r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
		published(r, digest1, pipeline.ActionUpToDate)
		r.mustWrite()
		if got := r.cond(TypeProgressing).Message; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
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

// The writer remembers the resourceVersions of its last 16 applies, so
// the informer's late echoes of any of them are recognised as its own.
func TestOursKeepsLast16(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	en := r.w.entryLocked("cat")
	var rvs []string
	for i := range 20 {
		st := &Status{Conditions: []metav1.Condition{{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
			Message: fmt.Sprint("apply ", i), LastTransitionTime: metav1.NewTime(r.clock())}}}
		o, err := r.w.apply(context.Background(), en, r.w.progressManager(), "", st)
		if err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, o.rv)
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if !slices.Equal(en.ours, rvs[4:]) {
		t.Fatalf("remembered %v, want the last 16 of %v", en.ours, rvs)
	}
}
