// Package metrics holds catalogsync's Prometheus metrics, in a registry of
// their own (never the global one, so tests and embedders get exactly
// these series):
//
//	catalogsync_syncs_total{catalog,result,reason}          finished syncs
//	catalogsync_syncs_in_progress                           syncs running now
//	catalogsync_sync_duration_seconds{result}               whole syncs
//	catalogsync_sync_phase_duration_seconds{phase}          phases of successful syncs
//	catalogsync_sync_pulled_bytes_total                     compressed layer bytes pulled
//	catalogsync_sync_files_total{how}                       FBC files published, parsed or reused
//	catalogsync_webhook_events_total{source,outcome}        webhook notifications and CloudEvents (source cloudevents)
//	catalogsync_http_requests_total{method,route,code}      HTTP requests
//	catalogsync_http_request_duration_seconds{method,route,code}
//	catalogsync_storage_operation_duration_seconds{op,outcome}
//	catalogsync_clustercatalogs_left_alone_total{catalog}   once LeftAlone is called
//
// plus the Go runtime and process series dashboards use, read at each
// scrape, with client_golang's names and HELP texts:
//
//	go_gc_duration_seconds (summary), go_gc_gomemlimit_bytes, go_goroutines,
//	go_info{version}, go_memstats_alloc_bytes, go_memstats_heap_alloc_bytes,
//	go_memstats_sys_bytes, go_threads, process_cpu_seconds_total,
//	process_max_fds, process_open_fds, process_resident_memory_bytes,
//	process_start_time_seconds, process_virtual_memory_bytes
//
// Every label takes values from a bounded set: HTTP routes are chi route
// patterns, never raw paths; catalog names are the configured ones.
//
// The text format is written here rather than by client_golang, whose
// dependencies (procfs, protobuf) cost the binary's start about 210 KB of
// allocations and 0.5 ms for this one endpoint.
package metrics

import "net/http"

const namespace = "catalogsync"

// Outcomes of a webhook notification, for Webhook; the source is the
// receiver's type ("distribution", "harbor", "github", ...), a fixed set.
const (
	// WebhookTriggered: authentic, and it triggered at least one catalog.
	WebhookTriggered = "triggered"
	// WebhookUnmatched: authentic, about no configured catalog.
	WebhookUnmatched = "unmatched"
	// WebhookIgnored: authentic, but not a push (a delete, a scan result).
	WebhookIgnored = "ignored"
	// WebhookDuplicate: a redelivery of a notification already handled.
	WebhookDuplicate = "duplicate"
	// WebhookPing: the sender's connectivity test.
	WebhookPing = "ping"
	// WebhookUnauthorized: no credentials (401).
	WebhookUnauthorized = "unauthorized"
	// WebhookForbidden: wrong credentials or signature (403).
	WebhookForbidden = "forbidden"
	// WebhookInvalid: a body or content type that does not parse (400, 415).
	WebhookInvalid = "invalid"
	// WebhookTooLarge: a body over the limit (413).
	WebhookTooLarge = "too_large"
)

var (
	// syncBuckets span a cached HEAD (milliseconds) to a large pull
	// (minutes).
	syncBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// httpBuckets span an index lookup to streaming a large catalog.
	httpBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// storageBuckets span a local Stat to a multipart upload.
	storageBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
)

// Metrics is catalogsync's set of metrics. Create one with New and share
// it; it is safe for concurrent use.
type Metrics struct {
	reg registry

	syncs         *family
	syncsRunning  *series
	syncDuration  *family
	phaseDuration *family
	bytesPulled   *series
	files         *family
	webhooks      *family
	httpRequests  *family
	httpDuration  *family
	storageOps    *family

	startTime func() (float64, error)
}

// New returns the metrics, in a registry of their own with the Go runtime
// and process series.
func New() *Metrics {
	m := &Metrics{reg: registry{families: map[string]*family{}}, startTime: startTime()}
	r := &m.reg
	m.syncs = r.family(counter, "syncs_total",
		"Finished syncs by catalog and result (UpToDate, Reused, Published or Failed); reason is the failure reason.",
		[]string{"catalog", "result", "reason"})
	m.syncsRunning = r.family(gauge, "syncs_in_progress", "Syncs running now.", nil).with()
	m.syncDuration = r.family(histogram, "sync_duration_seconds", "Duration of whole syncs by result.",
		[]string{"result"}, syncBuckets...)
	m.phaseDuration = r.family(histogram, "sync_phase_duration_seconds", "Time successful syncs spent in each phase.",
		[]string{"phase"}, syncBuckets...)
	m.bytesPulled = r.family(counter, "sync_pulled_bytes_total",
		"Compressed layer bytes pulled from registries by successful syncs.", nil).with()
	m.files = r.family(counter, "sync_files_total",
		"FBC files of the catalogs successful syncs published, by how: parsed, or reused from the content published before.",
		[]string{"how"})
	m.webhooks = r.family(counter, "webhook_events_total",
		"Webhook notifications and CloudEvents (source cloudevents) received by source and outcome.",
		[]string{"source", "outcome"})
	m.httpRequests = r.family(counter, "http_requests_total",
		"HTTP requests by method, route pattern and status code.", []string{"method", "route", "code"})
	m.httpDuration = r.family(histogram, "http_request_duration_seconds",
		"HTTP request latency (until the handler returns) by method, route pattern and status code.",
		[]string{"method", "route", "code"}, httpBuckets...)
	m.storageOps = r.family(histogram, "storage_operation_duration_seconds",
		"Object store operation latency by operation and outcome (ok, not_found, precondition_failed, canceled, error); get is timed until its stream is open.",
		[]string{"op", "outcome"}, storageBuckets...)
	return m
}

// Handler serves the metrics in Prometheus' text format (0.0.4), gzipped
// when the scraper accepts it.
func (m *Metrics) Handler() http.Handler { return http.HandlerFunc(m.serve) }

// Webhook counts one webhook notification. source and outcome must come
// from small fixed sets (see the Webhook* outcomes): every distinct pair
// is a series.
func (m *Metrics) Webhook(source, outcome string) {
	m.webhooks.with(source, outcome).inc(1)
}
