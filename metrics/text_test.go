package metrics_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// get scrapes h once, with the Accept-Encoding given (none when empty),
// and returns the answer and its body as sent.
func get(t *testing.T, h http.Handler, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	return resp, rec.Body.Bytes()
}

// parse reads the text format with Prometheus' own parser.
func parse(t *testing.T, body []byte) scraped {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, body)
	}
	return fams
}

func request(method, route string, status int, d time.Duration) metrics.Request {
	return metrics.Request{Request: httptest.NewRequest(method, "/x", nil), Route: route, Status: status, Duration: d}
}

func TestHistogramCountsEachObservationInItsBucket(t *testing.T) {
	m := metrics.New()
	// Bounds are inclusive: 5 ms is in le="0.005"; 20 s is above every
	// bound, in +Inf only.
	for _, d := range []time.Duration{500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 6 * time.Millisecond, 20 * time.Second} {
		m.ObserveHTTP(request(http.MethodGet, "/r", 200, d))
	}
	_, body := get(t, m.Handler(), "")
	h := parse(t, body).one(t, "catalogsync_http_request_duration_seconds", map[string]string{"route": "/r"}).GetHistogram()
	want := map[float64]uint64{.001: 2, .0025: 2, .005: 3, .01: 4, 5: 4, 10: 4}
	got := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		got[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	for le, n := range want {
		if got[le] != n {
			t.Errorf("bucket le=%v: %d, want %d", le, got[le], n)
		}
	}
	if len(h.GetBucket()) != 14 {
		t.Errorf("%d buckets, want the 13 HTTP bounds and +Inf", len(h.GetBucket()))
	}
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 0.0005+0.001+0.005+0.006+20 {
		t.Errorf("count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	if !strings.Contains(string(body), `catalogsync_http_request_duration_seconds_bucket{code="200",method="GET",route="/r",le="+Inf"} 5`+"\n") {
		t.Errorf("no +Inf bucket holding all 5:\n%s", body)
	}
}

func TestCountersNeverGoDown(t *testing.T) {
	m := metrics.New()
	o := pipeline.MetricsObserver(m)
	o.Observe(pipeline.Event{Catalog: "c", Phase: pipeline.PhaseResolving, Time: time.Unix(0, 0)})
	// A result claiming more reused files than files must not subtract.
	o.Observe(pipeline.Event{Catalog: "c", Phase: pipeline.PhasePublished, Time: time.Unix(1, 0),
		Result: &pipeline.Result{Action: pipeline.ActionPublished, Files: 1, FilesReused: 3}})
	_, body := get(t, m.Handler(), "")
	sc := parse(t, body)
	if v := sc.one(t, "catalogsync_sync_files_total", map[string]string{"how": "parsed"}).GetCounter().GetValue(); v != 0 {
		t.Fatalf("parsed files %v", v)
	}
	if v := sc.one(t, "catalogsync_sync_files_total", map[string]string{"how": "reused"}).GetCounter().GetValue(); v != 3 {
		t.Fatalf("reused files %v", v)
	}
}

func TestHostileLabelValuesParseBack(t *testing.T) {
	m := metrics.New()
	values := []string{
		`quote " inside`, `back\slash`, "new\nline", `\"`, "", `x="y",z="w"}`, "tab\tand\rcarriage",
		"# HELP fake", strings.Repeat("long", 16<<10), "ünïcødé ✓",
	}
	for _, v := range values {
		m.Webhook(v, metrics.WebhookTriggered)
	}
	// Bytes that are not UTF-8 become U+FFFD; values that then read alike
	// are one series, never two series the scraper would refuse.
	m.Webhook("bad\xff", metrics.WebhookInvalid)
	m.Webhook("bad\xfe", metrics.WebhookInvalid)
	m.LeftAlone()("\xc3", "finalizer")

	_, body := get(t, m.Handler(), "")
	sc := parse(t, body)
	for _, v := range values {
		if c := sc.one(t, "catalogsync_webhook_events_total", map[string]string{"source": v, "outcome": "triggered"}).GetCounter().GetValue(); c != 1 {
			t.Errorf("source %.40q: %v", v, c)
		}
	}
	if c := sc.one(t, "catalogsync_webhook_events_total", map[string]string{"source": "bad\uFFFD"}).GetCounter().GetValue(); c != 2 {
		t.Errorf("invalid UTF-8 source: %v, want both in one series", c)
	}
	sc.one(t, "catalogsync_clustercatalogs_left_alone_total", map[string]string{"catalog": "\uFFFD"})
}

func TestOutputIsSortedAndStable(t *testing.T) {
	m := metrics.New()
	// Made in reverse order, so that map or insertion order shows.
	for i := 30; i > 0; i-- {
		m.Webhook(fmt.Sprintf("source-%02d", i), metrics.WebhookTriggered)
		m.ObserveHTTP(request(http.MethodGet, fmt.Sprintf("/r/%02d", i), 200+i, time.Millisecond))
	}
	m.LeftAlone()("z", "")
	ours := func() string {
		_, body := get(t, m.Handler(), "")
		var keep []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "catalogsync_") || strings.HasPrefix(l, "# HELP catalogsync_") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	first := ours()
	for range 5 {
		if again := ours(); again != first {
			t.Fatalf("two scrapes of the same state differ:\n%s\n---\n%s", first, again)
		}
	}
	_, body := get(t, m.Handler(), "")
	var names, sources []string
	for _, l := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(l, "# TYPE "); ok {
			names = append(names, strings.Fields(name)[0])
		}
		if src, ok := strings.CutPrefix(l, `catalogsync_webhook_events_total{outcome="triggered",source="`); ok {
			sources = append(sources, src)
		}
	}
	if !slices.IsSorted(names) || len(names) < 20 {
		t.Errorf("families out of order: %v", names)
	}
	if !slices.IsSorted(sources) || len(sources) != 30 {
		t.Errorf("series out of order: %v", sources)
	}
}

func TestGzipOnlyWhenAccepted(t *testing.T) {
	m := metrics.New()
	m.Webhook("distribution", metrics.WebhookTriggered)
	for _, c := range []struct {
		accept string
		gzip   bool
	}{
		{"", false}, {"gzip", true}, {"deflate, GZIP;q=0.5", true}, {"*", false},
		{"gzip;q=0", false}, {"identity", false}, {"br, zstd", false},
	} {
		resp, body := get(t, m.Handler(), c.accept)
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.accept, got, c.gzip)
			continue
		}
		if c.gzip {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		parse(t, body).one(t, "catalogsync_webhook_events_total", map[string]string{"source": "distribution"})
	}
}

// TestRuntimeSeriesAreTheDocumentedOnes: the Go and process series
// dashboards use are there with their types, read at the scrape.
func TestRuntimeSeriesAreTheDocumentedOnes(t *testing.T) {
	before := time.Now()
	_, body := get(t, metrics.New().Handler(), "")
	sc := parse(t, body)
	want := map[string]dto.MetricType{
		"go_gc_duration_seconds": dto.MetricType_SUMMARY, "go_gc_gomemlimit_bytes": dto.MetricType_GAUGE,
		"go_goroutines": dto.MetricType_GAUGE, "go_threads": dto.MetricType_GAUGE, "go_info": dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes": dto.MetricType_GAUGE, "go_memstats_heap_alloc_bytes": dto.MetricType_GAUGE,
		"go_memstats_sys_bytes": dto.MetricType_GAUGE, "process_cpu_seconds_total": dto.MetricType_COUNTER,
		"process_resident_memory_bytes": dto.MetricType_GAUGE, "process_virtual_memory_bytes": dto.MetricType_GAUGE,
		"process_open_fds": dto.MetricType_GAUGE, "process_max_fds": dto.MetricType_GAUGE,
		"process_start_time_seconds": dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		if runtime.GOOS != "linux" && strings.HasPrefix(name, "process_") && name != "process_max_fds" {
			continue
		}
		f := sc[name]
		if f == nil || f.GetType() != typ || f.GetHelp() == "" || len(f.GetMetric()) != 1 {
			t.Errorf("%s: %v, want one %v series with a HELP text", name, f, typ)
		}
	}
	value := func(name string) float64 { return sc.one(t, name, nil).GetGauge().GetValue() }
	if v := value("go_goroutines"); v < 1 {
		t.Errorf("go_goroutines %v", v)
	}
	if v := value("go_memstats_heap_alloc_bytes"); v <= 0 || v != value("go_memstats_alloc_bytes") || v > value("go_memstats_sys_bytes") {
		t.Errorf("heap %v, alloc %v, sys %v", v, value("go_memstats_alloc_bytes"), value("go_memstats_sys_bytes"))
	}
	sc.one(t, "go_info", map[string]string{"version": runtime.Version()})
	if q := sc.one(t, "go_gc_duration_seconds", nil).GetSummary().GetQuantile(); len(q) != 5 {
		t.Errorf("GC pause quantiles %v", q)
	}
	if runtime.GOOS != "linux" {
		return
	}
	// /proc's start time has 10 ms ticks after a boot time in whole seconds.
	if v := value("process_start_time_seconds"); v > float64(before.Unix()+2) || v < float64(before.Add(-24*time.Hour).Unix()) {
		t.Errorf("process_start_time_seconds %v, the test began at %d", v, before.Unix())
	}
	if open, limit := value("process_open_fds"), value("process_max_fds"); open < 3 || open > limit {
		t.Errorf("%v open fds of %v", open, limit)
	}
	if rss, vsz := value("process_resident_memory_bytes"), value("process_virtual_memory_bytes"); rss < 1<<20 || rss > vsz {
		t.Errorf("resident %v, virtual %v", rss, vsz)
	}
}

// TestConcurrentUpdatesAndScrapes runs under the race detector in CI:
// series made, counted and observed from many goroutines while others
// scrape, and not one update lost.
func TestConcurrentUpdatesAndScrapes(t *testing.T) {
	m := metrics.New()
	const workers, rounds = 16, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			left := m.LeftAlone()
			for i := range rounds {
				m.Webhook(fmt.Sprintf("s%d", i%7), metrics.WebhookTriggered)
				m.ObserveHTTP(request(http.MethodGet, fmt.Sprintf("/r%d", (w+i)%5), 200, time.Duration(i)*time.Millisecond))
				left(fmt.Sprintf("c%d", i%3), "")
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 10 {
				_, body := get(t, m.Handler(), "gzip")
				if len(body) == 0 {
					t.Error("empty scrape")
				}
			}
		})
	}
	wg.Wait()
	_, body := get(t, m.Handler(), "")
	sc := parse(t, body)
	var webhooks, requests, left float64
	var observed uint64
	for _, x := range sc["catalogsync_webhook_events_total"].GetMetric() {
		webhooks += x.GetCounter().GetValue()
	}
	for _, x := range sc["catalogsync_http_requests_total"].GetMetric() {
		requests += x.GetCounter().GetValue()
	}
	for _, x := range sc["catalogsync_http_request_duration_seconds"].GetMetric() {
		observed += x.GetHistogram().GetSampleCount()
	}
	for _, x := range sc["catalogsync_clustercatalogs_left_alone_total"].GetMetric() {
		left += x.GetCounter().GetValue()
	}
	const n = workers * rounds
	if webhooks != n || requests != n || observed != n || left != n {
		t.Fatalf("webhooks %v, requests %v, observed %v, left alone %v; want %d each", webhooks, requests, observed, left, n)
	}
}

// TestSeriesMadeByManyAtOnceKeepsEveryCount: goroutines walking the same
// new label values side by side often find a series missing at once; one
// makes it and the others count into it.
func TestSeriesMadeByManyAtOnceKeepsEveryCount(t *testing.T) {
	m := metrics.New()
	const values, workers = 20000, 4
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-start
			for v := range values {
				m.Webhook(strconv.Itoa(v), metrics.WebhookTriggered)
			}
		})
	}
	close(start)
	wg.Wait()
	_, body := get(t, m.Handler(), "")
	series := parse(t, body)["catalogsync_webhook_events_total"].GetMetric()
	lost := 0
	for _, x := range series {
		lost += workers - int(x.GetCounter().GetValue())
	}
	if lost != 0 || len(series) != values {
		t.Fatalf("%d series, %d counts lost", len(series), lost)
	}
}
