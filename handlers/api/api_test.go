package api_test

import (
	"context"
	"flag"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/test/servers"
)

// TestAPI runs every documented operation against real components and
// validates each exchange against openapi.yaml; it fails at the end if a
// documented response (operation and status) was never produced, so the
// document cannot describe what the handler does not do.
func TestAPI(t *testing.T) {
	s := loadSpec(t)
	t.Run("lifecycle/fs", func(t *testing.T) { testLifecycle(t, s, newEnv(t, newFSStore(t))) })
	t.Run("lifecycle/s3", func(t *testing.T) {
		m := servers.SharedMinIO(t)
		testLifecycle(t, s, newEnv(t, minioStore(t, m, m.NewBucket(t))))
	})
	t.Run("progress", func(t *testing.T) { testProgress(t, s, newEnv(t, newFSStore(t))) })
	t.Run("failed sync", func(t *testing.T) { testFailedSync(t, s, newEnv(t, newFSStore(t))) })
	t.Run("client errors", func(t *testing.T) { testClientErrors(t, s, storeOnlyEnv(t, newFSStore(t))) })
	t.Run("body media types", func(t *testing.T) { testBodyMediaTypes(t, s, storeOnlyEnv(t, newFSStore(t))) })
	t.Run("token", func(t *testing.T) { testToken(t, s, storeOnlyEnv(t, newFSStore(t), api.WithToken("s3cret-token"))) })
	t.Run("closed by default", func(t *testing.T) {
		testClosedByDefault(t, s, storeOnlyEnv(t, newFSStore(t), api.WithOpen(false)))
	})
	t.Run("service", func(t *testing.T) { testService(t, s, storeOnlyEnv(t, newFSStore(t))) })
	t.Run("corrupt records", func(t *testing.T) { testCorruptRecords(t, s, storeOnlyEnv(t, newFSStore(t))) })
	t.Run("verified by", func(t *testing.T) { testVerifiedBy(t, s, storeOnlyEnv(t, newFSStore(t))) })
	t.Run("store down", func(t *testing.T) { testStoreDown(t, s) })
	if t.Failed() {
		return
	}
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
		t.Log("not checking that every documented response was produced: -run selects some subtests only")
		return
	}
	if testing.Short() {
		t.Log("not checking that every documented response was produced: -short skips the subtests with a registry")
		return
	}
	if miss := s.missing(); len(miss) > 0 {
		t.Fatalf("documented responses no test produced:\n  %s", strings.Join(miss, "\n  "))
	}
}

func getCatalog(t *testing.T, s *spec, e *env, name string) api.Catalog {
	t.Helper()
	x := e.do(t, s, request{method: http.MethodGet, path: "/api/v1/catalogs/" + name})
	wantStatus(t, x, http.StatusOK)
	var c api.Catalog
	x.decode(t, &c)
	return c
}

// trigger asks for a sync and checks the 202: Location names the
// operation returned.
func trigger(t *testing.T, s *spec, e *env, name string, r request) api.Operation {
	t.Helper()
	r.method, r.path = http.MethodPost, "/api/v1/catalogs/"+name+"/sync"
	x := e.do(t, s, r)
	wantStatus(t, x, http.StatusAccepted)
	var op api.Operation
	x.decode(t, &op)
	if loc := x.header.Get("Location"); loc != "/api/v1/operations/"+op.ID {
		t.Fatalf("Location %q for operation %q", loc, op.ID)
	}
	if op.Catalog != name || op.State != "Queued" {
		t.Fatalf("new operation %+v, want a queued sync of %s", op, name)
	}
	return op
}

// testLifecycle: list and get before any sync, trigger, poll the operation
// to success, then get what was published; a second sync finds the tag
// unchanged.
func testLifecycle(t *testing.T, s *spec, e *env) {
	x := e.do(t, s, request{method: http.MethodGet, path: "/api/v1/catalogs"})
	wantStatus(t, x, http.StatusOK)
	var list api.CatalogList
	x.decode(t, &list)
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "down,slow,tiny" {
		t.Fatalf("listed %v, want down, slow, tiny in name order", names)
	}

	before := getCatalog(t, s, e, tinyName)
	if before.Phase != api.PhaseIdle || before.Published != nil || before.LastPoll != nil || before.LastSync != nil {
		t.Fatalf("never synced catalog: %+v", before)
	}
	if before.ServingURL != "https://catalogsync.example.test/catalogs/tiny" || before.PollIntervalSeconds != 600 || before.Image != e.set[0].Image.String() {
		t.Fatalf("catalog %+v", before)
	}

	op := trigger(t, s, e, tinyName, request{})
	if strings.Join(op.Reasons, ",") != "api" {
		t.Fatalf("reasons %v, want [api]", op.Reasons)
	}
	done := e.waitOperation(t, s, op.ID)
	if done.State != "Succeeded" || done.Result == nil || done.Error != nil {
		t.Fatalf("operation %+v", done)
	}
	r := done.Result
	if r.Action != "Published" || r.Digest != e.digest || r.BytesPulled <= 0 || r.Objects == 0 ||
		r.Phases["Pulling"] <= 0 || r.Phases["Publishing"] <= 0 || !strings.HasSuffix(r.ResolvedRef, "@"+e.digest) {
		t.Fatalf("result %+v", r)
	}
	if done.Started.IsZero() || done.Finished.Before(done.Started) || done.DurationSeconds == nil || done.QueuedSeconds == nil {
		t.Fatalf("timings of %+v", done)
	}

	after := getCatalog(t, s, e, tinyName)
	p := after.Published
	if after.Phase != "Published" || p == nil || p.Digest != e.digest || p.Ref != e.set[0].Image.String() ||
		p.ResolvedRef != r.ResolvedRef || p.PublishedAt.IsZero() || p.PublishedAt.Before(done.Started) {
		t.Fatalf("published catalog %+v (pointer %+v)", after, p)
	}
	if after.LastSync == nil || after.LastSync.ID != op.ID || after.ConsecutiveFailures != 0 || !after.NextRetry.IsZero() {
		t.Fatalf("last sync of %+v", after)
	}
	x = e.do(t, s, request{method: http.MethodGet, path: "/api/v1/catalogs"})
	wantStatus(t, x, http.StatusOK)
	list = api.CatalogList{}
	x.decode(t, &list)
	if len(list.Items) != 3 || list.Items[2].Name != tinyName || list.Items[2].Published == nil ||
		list.Items[2].Published.Digest != e.digest || list.Items[1].Published != nil {
		t.Fatalf("list after syncing tiny only: %+v", list)
	}

	// Level-based: the stored pointer already has the digest, so nothing
	// is pulled again, and the poll is recorded.
	op2 := trigger(t, s, e, tinyName, request{
		header: map[string]string{"Content-Type": "application/json"},
		body:   `{"reason": "manual check"}`,
	})
	if op2.ID == op.ID || strings.Join(op2.Reasons, ",") != "api:manual check" {
		t.Fatalf("second operation %+v", op2)
	}
	done2 := e.waitOperation(t, s, op2.ID)
	if done2.Result == nil || done2.Result.Action != "UpToDate" || done2.Result.BytesPulled != 0 {
		t.Fatalf("second sync %+v", done2)
	}
	again := getCatalog(t, s, e, tinyName)
	if again.LastPoll == nil || again.LastPoll.Digest != e.digest || again.LastPoll.Ref != e.set[0].Image.String() ||
		again.Published.PublishedAt != p.PublishedAt {
		t.Fatalf("after an unchanged poll: %+v", again)
	}
}

// testProgress watches a sync slowed down at the registry: the catalog
// and its operation show the running phase and the layer's bytes.
func testProgress(t *testing.T, s *spec, e *env) {
	e.proxy.Inject(servers.Throttle(200), 0, servers.BlobGET)
	op := trigger(t, s, e, slowName, request{})
	deadline := time.Now().Add(time.Minute)
	for {
		c := getCatalog(t, s, e, slowName)
		if pr := c.Progress; c.Phase == "Pulling" && pr != nil && pr.BytesDone > 0 {
			if pr.Layer < 1 || pr.Layers < pr.Layer || pr.BytesTotal < pr.BytesDone || pr.LayerDigest == "" || pr.Digest != e.digest {
				t.Fatalf("progress %+v", pr)
			}
			if c.Running == nil || c.Running.ID != op.ID || c.Running.State != "Running" {
				t.Fatalf("running operation of %+v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw the layer being pulled; last %+v", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	running := e.do(t, s, request{method: http.MethodGet, path: "/api/v1/operations/" + op.ID})
	var rop api.Operation
	running.decode(t, &rop)
	if rop.Progress == nil || rop.Started.IsZero() {
		t.Fatalf("running operation %+v", rop)
	}
	e.proxy.Clear()
	if done := e.waitOperation(t, s, op.ID); done.State != "Succeeded" {
		t.Fatalf("slowed sync %+v", done)
	}
}

// testFailedSync: a registry that refuses connections fails the sync with
// a retryable error, and the catalog says when it is retried.
func testFailedSync(t *testing.T, s *spec, e *env) {
	op := trigger(t, s, e, downName, request{})
	done := e.waitOperation(t, s, op.ID)
	if done.State != "Failed" || done.Result != nil || done.Error == nil {
		t.Fatalf("operation %+v", done)
	}
	if er := done.Error; er.Reason != "RegistryError" || !er.Retryable || er.Phase != "Resolving" || er.Message == "" {
		t.Fatalf("error %+v", er)
	}
	c := getCatalog(t, s, e, downName)
	if c.Phase != "Failed" || c.ConsecutiveFailures != 1 || c.LastSync == nil || c.LastSync.Error == nil || c.Published != nil {
		t.Fatalf("failed catalog %+v", c)
	}
	// The backoff is an hour with ±20% jitter.
	if wait := time.Until(c.NextRetry); wait < 30*time.Minute || wait > 2*time.Hour {
		t.Fatalf("next retry %v, in %v", c.NextRetry, wait)
	}
}

// testClientErrors: unknown catalogs and operations, invalid names and ids,
// bodies and media types, wrong methods and routes.
func testClientErrors(t *testing.T, s *spec, e *env) {
	cases := []struct {
		name   string
		r      request
		status int
	}{
		{"unknown catalog", request{method: "GET", path: "/api/v1/catalogs/nope"}, 404},
		{"sync unknown catalog", request{method: "POST", path: "/api/v1/catalogs/nope/sync"}, 404},
		{"unknown operation", request{method: "GET", path: "/api/v1/operations/0123456789abcdef01234567"}, 404},
		{"upper-case name", request{method: "GET", path: "/api/v1/catalogs/Tiny"}, 400},
		{"escaped slash in name", request{method: "GET", path: "/api/v1/catalogs/a%2Fb"}, 400},
		{"name too long", request{method: "GET", path: "/api/v1/catalogs/" + strings.Repeat("a", 254)}, 400},
		{"sync invalid name", request{method: "POST", path: "/api/v1/catalogs/-x-/sync"}, 400},
		{"invalid operation id", request{method: "GET", path: "/api/v1/operations/not%20an%20id"}, 400},
		{"escaped operation id", request{method: "GET", path: "/api/v1/operations/abc%2D1"}, 404},
		{"body not JSON", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "text/plain"}, body: "please"}, 415},
		{"malformed JSON", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"reason":`}, 400},
		{"unknown field", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"image": "registry.example.test/x:y"}`}, 400},
		{"reason too long", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"reason": "` + strings.Repeat("x", 65) + `"}`}, 400},
		{"null body", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "application/json"}, body: `null`}, 400},
		{"reason with newline", request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"reason": "a\nb"}`}, 400},
		{"not acceptable list", request{method: "GET", path: "/api/v1/catalogs", header: map[string]string{"Accept": "text/html"}}, 406},
		{"not acceptable get", request{method: "GET", path: "/api/v1/catalogs/tiny", header: map[string]string{"Accept": "application/xml"}}, 406},
		{"json refused", request{method: "GET", path: "/api/v1/catalogs/tiny", header: map[string]string{"Accept": "application/json;q=0, */*"}}, 406},
		{"not acceptable sync", request{method: "POST", path: "/api/v1/catalogs/tiny/sync", header: map[string]string{"Accept": "text/plain"}}, 406},
		{"not acceptable operation", request{method: "GET", path: "/api/v1/operations/abc", header: map[string]string{"Accept": "image/png"}}, 406},
		{"acceptable wildcard", request{method: "GET", path: "/api/v1/catalogs/tiny", header: map[string]string{"Accept": "text/html, application/*;q=0.5"}}, 200},
		{"unknown route", request{method: "GET", path: "/api/v1/nothing"}, 404},
		{"unknown root route", request{method: "GET", path: "/nothing"}, 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := e.do(t, s, c.r)
			wantStatus(t, x, c.status)
			if c.status >= 400 && x.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%v: a %d must be problem+json", x, c.status)
			}
		})
	}

	// Two JSON values are not one JSON text; kin-openapi reads only the
	// first, so this one is sent past the document check.
	x := e.send(t, request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
		header: map[string]string{"Content-Type": "application/json"}, body: `{} {}`})
	wantStatus(t, x, http.StatusBadRequest)

	// A method the route does not have: 405, a problem, and Allow.
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/catalogs/tiny", "GET"},
		{"GET", "/api/v1/catalogs/tiny/sync", "POST"},
		{"PUT", "/api/v1/catalogs", "GET"},
		{"POST", "/api/v1/operations/abc", "GET"},
		{"POST", "/healthz", "GET"},
		{"DELETE", "/openapi.yaml", "GET"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			x := e.do(t, s, request{method: c.method, path: c.path})
			wantStatus(t, x, http.StatusMethodNotAllowed)
			if got := x.header.Get("Allow"); got != c.allow {
				t.Fatalf("%v: Allow %q, want %q", x, got, c.allow)
			}
		})
	}
}

// testClosedByDefault: without a token and without WithOpen(true), POST is
// refused whatever is sent; reads stay open.
func testClosedByDefault(t *testing.T, s *spec, e *env) {
	for _, auth := range []string{"", "Bearer anything", "Bearer "} {
		x := e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync", header: map[string]string{"Authorization": auth}})
		wantStatus(t, x, http.StatusUnauthorized)
	}
	x := e.do(t, s, request{method: "GET", path: "/api/v1/catalogs/tiny"})
	wantStatus(t, x, http.StatusOK)
}

// testToken: with a token, POST needs it; reads stay open.
func testToken(t *testing.T, s *spec, e *env) {
	for _, auth := range []string{"", "Bearer wrong", "Basic czNjcmV0LXRva2Vu", "Bearer s3cret-token-and-more", "s3cret-token"} {
		x := e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync", header: map[string]string{"Authorization": auth}})
		wantStatus(t, x, http.StatusUnauthorized)
		if !strings.HasPrefix(x.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%v: no Bearer challenge", x)
		}
	}
	// Authorization is checked before the name, so without a token one
	// learns nothing about catalogs.
	x := e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/nope/sync"})
	wantStatus(t, x, http.StatusUnauthorized)
	x = e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync", header: map[string]string{"Authorization": "Bearer s3cret-token"}})
	wantStatus(t, x, http.StatusAccepted)
	x = e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync", header: map[string]string{"Authorization": "bearer s3cret-token"}})
	wantStatus(t, x, http.StatusAccepted)
	x = e.do(t, s, request{method: "GET", path: "/api/v1/catalogs/tiny"})
	wantStatus(t, x, http.StatusOK)
}

// testService: the document, liveness, readiness and metrics.
func testService(t *testing.T, s *spec, e *env) {
	x := e.do(t, s, request{method: "GET", path: "/openapi.yaml"})
	wantStatus(t, x, http.StatusOK)
	if !strings.Contains(string(x.body), "operationId: syncCatalog") {
		t.Fatalf("/openapi.yaml is not the document: %.200s", x.body)
	}
	wantStatus(t, e.do(t, s, request{method: "GET", path: "/healthz"}), http.StatusOK)
	wantStatus(t, e.do(t, s, request{method: "GET", path: "/readyz"}), http.StatusOK)
	x = e.do(t, s, request{method: "GET", path: "/metrics"})
	wantStatus(t, x, http.StatusOK)
	if !strings.Contains(string(x.body), "catalogsync_syncs_in_progress") {
		t.Fatalf("/metrics: %.300s", x.body)
	}
}

// testStoreDown stops a real MinIO under the store: readiness and every
// read of stored state answer 503 with Retry-After, liveness stays 200,
// and readiness comes back with MinIO.
func testStoreDown(t *testing.T, s *spec) {
	m := servers.StartMinIO(t)
	e := storeOnlyEnv(t, minioStore(t, m, m.NewBucket(t)), api.WithReadyTimeout(5*time.Second))
	wantStatus(t, e.do(t, s, request{method: "GET", path: "/readyz"}), http.StatusOK)
	m.Stop()
	for _, path := range []string{"/readyz", "/api/v1/catalogs", "/api/v1/catalogs/tiny"} {
		x := e.do(t, s, request{method: "GET", path: path})
		wantStatus(t, x, http.StatusServiceUnavailable)
		if x.header.Get("Retry-After") == "" {
			t.Fatalf("%v: no Retry-After", x)
		}
	}
	wantStatus(t, e.do(t, s, request{method: "GET", path: "/healthz"}), http.StatusOK)
	m.Start()
	wantStatus(t, e.do(t, s, request{method: "GET", path: "/readyz"}), http.StatusOK)
}

// testCorruptRecords: a pointer and a last poll that do not parse are
// reported on their catalog, which is still listed, not turned into a 503.
func testCorruptRecords(t *testing.T, s *spec, e *env) {
	ctx := context.Background()
	for _, key := range []string{"catalogs/tiny/current", "catalogs/tiny/lastpoll"} {
		if _, err := e.store.Put(ctx, key, strings.NewReader("not json")); err != nil {
			t.Fatal(err)
		}
	}
	c := getCatalog(t, s, e, tinyName)
	if c.Published != nil || c.LastPoll != nil || !strings.Contains(c.StoreError, "current") || !strings.Contains(c.StoreError, "lastpoll") {
		t.Fatalf("catalog with corrupt records: %+v", c)
	}
	x := e.do(t, s, request{method: http.MethodGet, path: "/api/v1/catalogs"})
	wantStatus(t, x, http.StatusOK)
}

// testVerifiedBy: what verified the served content, recorded in its
// meta.json, is in the published view.
func testVerifiedBy(t *testing.T, s *spec, e *env) {
	ctx := context.Background()
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const by = `keyless identity release@acme.example issuer https://issuer.acme.example (rule "acme")`
	w, err := catalog.NewWriter(ctx, e.store, tinyName, digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("olm.package", "", "a", []byte(`{"schema":"olm.package","name":"a"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, catalog.Meta{Ref: "r:1", VerifiedBy: by}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(ctx, e.store, tinyName, catalog.Pointer{Digest: digest, Ref: "r:1", ResolvedRef: "r@" + digest, ResolvedAt: time.Now(), PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if c := getCatalog(t, s, e, tinyName); c.Published == nil || c.Published.VerifiedBy != by {
		t.Fatalf("published view %+v, want verifiedBy %q", c.Published, by)
	}
}

// testBodyMediaTypes: what curl sends. A POST with neither body nor
// Content-Type (curl -X POST) and a JSON body without Content-Type are
// accepted; a body declared as another type (curl -d sends a form) is
// refused with a problem naming the type received and the one wanted.
func testBodyMediaTypes(t *testing.T, s *spec, e *env) {
	x := e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync"})
	wantStatus(t, x, http.StatusAccepted)

	// The document lists application/json only, so kin-openapi refuses a
	// body without a type: sent past the document check.
	x = e.send(t, request{method: "POST", path: "/api/v1/catalogs/tiny/sync", body: `{"reason": "by hand"}`})
	wantStatus(t, x, http.StatusAccepted)
	var op api.Operation
	x.decode(t, &op)
	if !slices.Contains(op.Reasons, "api:by hand") {
		t.Fatalf("%v: the reason of a body without Content-Type was not read", x)
	}

	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain; charset=utf-8"} {
		x = e.do(t, s, request{method: "POST", path: "/api/v1/catalogs/tiny/sync",
			header: map[string]string{"Content-Type": ct}, body: `{"reason": "by hand"}`})
		wantStatus(t, x, http.StatusUnsupportedMediaType)
		var p struct{ Detail string }
		x.decode(t, &p)
		if !strings.Contains(p.Detail, strings.Split(ct, ";")[0]) || !strings.Contains(p.Detail, "application/json") {
			t.Fatalf("%v: the problem must name the type sent and the one wanted", x)
		}
	}
}
