// Package metrics holds catalogsync's Prometheus metrics, in a registry of
// their own (never the global one, so tests and embedders get exactly
// these series):
//
//	catalogsync_syncs_total{catalog,result,reason}          finished syncs
//	catalogsync_syncs_in_progress                           syncs running now
//	catalogsync_sync_duration_seconds{result}               whole syncs
//	catalogsync_sync_phase_duration_seconds{phase}          phases of successful syncs
//	catalogsync_sync_pulled_bytes_total                     compressed layer bytes pulled
//	catalogsync_webhook_events_total{source,outcome}        webhook notifications and CloudEvents (source cloudevents)
//	catalogsync_http_requests_total{method,route,code}      HTTP requests
//	catalogsync_http_request_duration_seconds{method,route,code}
//	catalogsync_storage_operation_duration_seconds{op,outcome}
//
// plus the Go runtime and process collectors. Every label takes values
// from a bounded set: HTTP routes are chi route patterns, never raw paths;
// catalog names are the configured ones.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

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
	reg *prometheus.Registry

	syncs         *prometheus.CounterVec
	syncsRunning  prometheus.Gauge
	syncDuration  *prometheus.HistogramVec
	phaseDuration *prometheus.HistogramVec
	bytesPulled   prometheus.Counter
	files         *prometheus.CounterVec
	webhooks      *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	storageOps    *prometheus.HistogramVec

	handler http.Handler
}

// New returns the metrics, registered in a new registry with the Go
// runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "syncs_total",
			Help: "Finished syncs by catalog and result (UpToDate, Reused, Published or Failed); reason is the failure reason.",
		}, []string{"catalog", "result", "reason"}),
		syncsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "syncs_in_progress",
			Help: "Syncs running now.",
		}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "sync_duration_seconds",
			Help:    "Duration of whole syncs by result.",
			Buckets: syncBuckets,
		}, []string{"result"}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "sync_phase_duration_seconds",
			Help:    "Time successful syncs spent in each phase.",
			Buckets: syncBuckets,
		}, []string{"phase"}),
		bytesPulled: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "sync_pulled_bytes_total",
			Help: "Compressed layer bytes pulled from registries by successful syncs.",
		}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "sync_files_total",
			Help: "FBC files of the catalogs successful syncs published, by how: parsed, or reused from the content published before.",
		}, []string{"how"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhook_events_total",
			Help: "Webhook notifications and CloudEvents (source cloudevents) received by source and outcome.",
		}, []string{"source", "outcome"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "HTTP request latency (until the handler returns) by method, route pattern and status code.",
			Buckets: httpBuckets,
		}, []string{"method", "route", "code"}),
		storageOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "storage_operation_duration_seconds",
			Help:    "Object store operation latency by operation and outcome (ok, not_found, precondition_failed, canceled, error); get is timed until its stream is open.",
			Buckets: storageBuckets,
		}, []string{"op", "outcome"}),
	}
	reg.MustRegister(
		m.syncs, m.syncsRunning, m.syncDuration, m.phaseDuration, m.bytesPulled, m.files,
		m.webhooks, m.httpRequests, m.httpDuration, m.storageOps,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m
}

// Registry returns the registry, for adding collectors of one's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the format the scraper asks for.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Webhook counts one webhook notification. source and outcome must come
// from small fixed sets (see the Webhook* outcomes): every distinct pair
// is a series.
func (m *Metrics) Webhook(source, outcome string) {
	m.webhooks.WithLabelValues(source, outcome).Inc()
}
