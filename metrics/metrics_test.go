package metrics_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// service is catalogsync wired as serve wires it: an instrumented store
// under a real pipeline and engine, the metrics observer on every sync,
// and the HTTP middleware on a router serving the API and the content.
type service struct {
	m      *metrics.Metrics
	raw    *fs.Store
	store  storage.Store
	engine *engine.Engine
	srv    *httptest.Server
	digest string
}

func newService(t *testing.T) *service {
	t.Helper()
	reg := servers.StartRegistry(t)
	img := imagebuild.FromDir(filepath.Join("..", "testdata", "fbc", "tiny", "configs"), "/configs")
	digest, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(reg.Host), reg.Host+"/tiny/catalog:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens on down: its syncs fail.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()

	raw, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	store := m.Store(raw)
	t.Cleanup(func() { store.(io.Closer).Close() })
	src, err := source.New(
		source.WithHosts(source.Host{Name: reg.Host, PlainHTTP: true}, source.Host{Name: down, PlainHTTP: true}),
		source.WithDockerConfig(false), source.WithRetry(1, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	set := engine.StaticCatalogs{
		{Name: "tiny", Image: catalogspec.ParseImage(reg.Host + "/tiny/catalog:v1")},
		{Name: "down", Image: catalogspec.ParseImage(down + "/down/catalog:v1")},
	}
	eng := engine.New(pipeline.New(src, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true)), set, store,
		engine.WithSettle(0, 0), engine.WithObservers(pipeline.MetricsObserver(m)),
		engine.WithBackoff(backoff.Backoff{Min: time.Hour, Max: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	eng.Start(ctx)
	t.Cleanup(func() { cancel(); eng.Wait() })

	r := chi.NewRouter()
	r.Use(m.HTTPMiddleware)
	api.New(eng, set, store, api.WithMetrics(m.Handler())).Mount(r)
	content.New(store).Mount(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &service{m: m, raw: raw, store: store, engine: eng, srv: srv, digest: digest}
}

func (s *service) get(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// syncNow triggers a sync through the API and waits for its end.
func (s *service) syncNow(t *testing.T, name string) engine.Operation {
	t.Helper()
	op, err := s.engine.Trigger(context.Background(), name, "test")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, _ := s.engine.Operation(op.ID)
		if got.State == engine.OpSucceeded || got.State == engine.OpFailed {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s still %s", op.ID, got.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads /metrics through the router and parses the text format.
func (s *service) scrape(t *testing.T) scraped {
	t.Helper()
	code, body := s.get(t, http.MethodGet, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

type scraped map[string]*dto.MetricFamily

// find returns the metrics of family name whose labels include want.
func (s scraped) find(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := s[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// one returns the single metric of name with exactly the labels want
// among others, failing otherwise.
func (s scraped) one(t *testing.T, name string, want map[string]string) *dto.Metric {
	t.Helper()
	ms := s.find(name, want)
	if len(ms) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(ms))
	}
	return ms[0]
}

// eventually retries check against fresh scrapes: the observer gets sync
// events on goroutines of its own, a moment after the engine reports.
func (s *service) eventually(t *testing.T, what string, check func(scraped) bool) scraped {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sc := s.scrape(t)
		if check(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMetricsAfterSync(t *testing.T) {
	s := newService(t)
	op := s.syncNow(t, "tiny")
	if op.State != engine.OpSucceeded || op.Result.Action != pipeline.ActionPublished {
		t.Fatalf("sync %+v", op)
	}
	failed := s.syncNow(t, "down")
	if failed.State != engine.OpFailed {
		t.Fatalf("sync of an unreachable registry %+v", failed)
	}
	if code, _ := s.get(t, http.MethodGet, "/catalogs/tiny/api/v1/all"); code != http.StatusOK {
		t.Fatalf("/all: %d", code)
	}
	if code, _ := s.get(t, http.MethodGet, "/catalogs/tiny/api/v1/metas?schema=olm.package"); code != http.StatusOK {
		t.Fatalf("/metas: %d", code)
	}
	if code, _ := s.get(t, http.MethodGet, "/api/v1/catalogs/tiny"); code != http.StatusOK {
		t.Fatalf("/api/v1/catalogs/tiny: %d", code)
	}
	if code, _ := s.get(t, http.MethodGet, "/no/such/page"); code != http.StatusNotFound {
		t.Fatalf("/no/such/page: %d", code)
	}
	s.m.Webhook("distribution", metrics.WebhookTriggered)
	s.m.Webhook("distribution", metrics.WebhookTriggered)
	s.m.Webhook("harbor", metrics.WebhookForbidden)

	sc := s.eventually(t, "both syncs", func(sc scraped) bool {
		return len(sc.find("catalogsync_syncs_total", map[string]string{"result": "Failed"})) == 1 &&
			len(sc.find("catalogsync_syncs_total", map[string]string{"result": "Published"})) == 1
	})

	// Syncs by result and reason.
	if v := sc.one(t, "catalogsync_syncs_total", map[string]string{"catalog": "tiny", "result": "Published", "reason": ""}).GetCounter().GetValue(); v != 1 {
		t.Fatalf("published syncs %v", v)
	}
	if v := sc.one(t, "catalogsync_syncs_total", map[string]string{"catalog": "down", "result": "Failed", "reason": string(pipeline.ReasonRegistry)}).GetCounter().GetValue(); v != 1 {
		t.Fatalf("failed syncs %v", v)
	}
	if v := sc.one(t, "catalogsync_syncs_in_progress", nil).GetGauge().GetValue(); v != 0 {
		t.Fatalf("%v syncs in progress after both ended", v)
	}
	for _, result := range []string{"Published", "Failed"} {
		h := sc.one(t, "catalogsync_sync_duration_seconds", map[string]string{"result": result}).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() <= 0 {
			t.Fatalf("%s sync duration: %v", result, h)
		}
	}
	// Phase durations, with their buckets, for every phase the sync went
	// through; the sum matches the result's own figures.
	for ph, d := range op.Result.Phases {
		h := sc.one(t, "catalogsync_sync_phase_duration_seconds", map[string]string{"phase": string(ph)}).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != d.Seconds() || len(h.GetBucket()) < 10 {
			t.Fatalf("phase %s (%v): %v", ph, d, h)
		}
		last := h.GetBucket()[len(h.GetBucket())-1]
		if last.GetCumulativeCount() != 1 {
			t.Fatalf("phase %s: largest bucket %v", ph, last)
		}
	}
	for _, ph := range []pipeline.Phase{pipeline.PhaseResolving, pipeline.PhasePulling, pipeline.PhaseValidating, pipeline.PhaseIndexing, pipeline.PhasePublishing} {
		if len(sc.find("catalogsync_sync_phase_duration_seconds", map[string]string{"phase": string(ph)})) != 1 {
			t.Fatalf("no duration of phase %s", ph)
		}
	}
	if v := sc.one(t, "catalogsync_sync_pulled_bytes_total", nil).GetCounter().GetValue(); v != float64(op.Result.BytesPulled) || v <= 0 {
		t.Fatalf("pulled bytes %v, the sync says %d", v, op.Result.BytesPulled)
	}
	// A first sync parses every file.
	if v := sc.one(t, "catalogsync_sync_files_total", map[string]string{"how": "parsed"}).GetCounter().GetValue(); v != float64(op.Result.Files) || v <= 0 {
		t.Fatalf("parsed files %v, the sync says %d", v, op.Result.Files)
	}
	if v := sc.one(t, "catalogsync_sync_files_total", map[string]string{"how": "reused"}).GetCounter().GetValue(); v != 0 {
		t.Fatalf("reused files %v on a first sync", v)
	}

	// Storage operations by op and outcome: the sync wrote content and
	// swapped the pointer; reads (a pointer is read with its ETag in one
	// get) found what exists and what does not.
	for _, c := range []struct{ op, outcome string }{
		{"put", metrics.OutcomeOK}, {"putif", metrics.OutcomeOK}, {"get", metrics.OutcomeOK},
		{"get", metrics.OutcomeNotFound},
	} {
		h := sc.one(t, "catalogsync_storage_operation_duration_seconds", map[string]string{"op": c.op, "outcome": c.outcome}).GetHistogram()
		if h.GetSampleCount() == 0 || len(h.GetBucket()) < 10 {
			t.Fatalf("storage %s %s: %v", c.op, c.outcome, h)
		}
	}

	// HTTP requests by route pattern: the catalog's name is a label value
	// nowhere, an unknown path is "unmatched".
	for _, c := range []struct{ route, code string }{
		{"/catalogs/{name}/api/v1/all", "200"},
		{"/catalogs/{name}/api/v1/metas", "200"},
		{"/api/v1/catalogs/{name}", "200"},
		{metrics.RouteUnmatched, "404"},
	} {
		labels := map[string]string{"method": "GET", "route": c.route, "code": c.code}
		if v := sc.one(t, "catalogsync_http_requests_total", labels).GetCounter().GetValue(); v != 1 {
			t.Fatalf("requests %v: %v", labels, v)
		}
		if h := sc.one(t, "catalogsync_http_request_duration_seconds", labels).GetHistogram(); h.GetSampleCount() != 1 {
			t.Fatalf("latency %v: %v", labels, h)
		}
	}
	for _, m := range sc["catalogsync_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "tiny") {
				t.Fatalf("a raw path became a route label: %v", m)
			}
		}
	}

	// Webhook events by source and outcome.
	if v := sc.one(t, "catalogsync_webhook_events_total", map[string]string{"source": "distribution", "outcome": "triggered"}).GetCounter().GetValue(); v != 2 {
		t.Fatalf("distribution webhooks %v", v)
	}
	if v := sc.one(t, "catalogsync_webhook_events_total", map[string]string{"source": "harbor", "outcome": "forbidden"}).GetCounter().GetValue(); v != 1 {
		t.Fatalf("harbor webhooks %v", v)
	}
	// The runtime collectors are there too.
	if sc["go_goroutines"] == nil || sc["process_cpu_seconds_total"] == nil {
		t.Fatal("no Go or process metrics")
	}
}

// TestStoreKeepsOptionalInterfaces: the timed store still closes and
// cleans leftovers (GC finds them through it), and those are timed too.
func TestStoreKeepsOptionalInterfaces(t *testing.T) {
	m := metrics.New()
	raw, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := m.Store(raw)
	if _, ok := store.(io.Closer); !ok {
		t.Fatal("the timed fs store is no io.Closer")
	}
	if _, ok := store.(catalog.LeftoverCleaner); !ok {
		t.Fatal("the timed fs store is no catalog.LeftoverCleaner")
	}
	if u, ok := store.(interface{ Unwrap() storage.Store }); !ok || u.Unwrap() != raw {
		t.Fatal("Unwrap does not return the store")
	}
	ctx := context.Background()
	if _, err := store.PutIf(ctx, "catalogs/x/current", []byte("{}"), ""); err != nil {
		t.Fatal(err)
	}
	// A second create-only write is refused: an answer, not a fault.
	if _, err := store.PutIf(ctx, "catalogs/x/current", []byte("{}"), ""); err == nil {
		t.Fatal("second create-only PutIf succeeded")
	}
	if err := store.Delete(ctx, "catalogs/x/current"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, "../escape"); err == nil {
		t.Fatal("Stat of an invalid key succeeded")
	}
	if _, err := catalog.GC(ctx, store, catalog.GCOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if err := store.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sc := scraped(fams)
	for _, c := range []struct{ op, outcome string }{
		{"putif", metrics.OutcomeOK}, {"putif", metrics.OutcomePreconditionFailed},
		{"delete", metrics.OutcomeOK}, {"stat", metrics.OutcomeError},
		{"list", metrics.OutcomeOK}, {"leftovers", metrics.OutcomeOK},
	} {
		if h := sc.one(t, "catalogsync_storage_operation_duration_seconds", map[string]string{"op": c.op, "outcome": c.outcome}).GetHistogram(); h.GetSampleCount() == 0 {
			t.Fatalf("%s %s not timed", c.op, c.outcome)
		}
	}
}
