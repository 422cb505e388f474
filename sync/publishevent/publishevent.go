// Package publishevent tells other systems that a catalog was published: a
// [pipeline.Observer] that sends a CloudEvent of type
// io.catalogsync.catalog.published (binary HTTP mode) to a sink URL, such
// as the K_SINK a Knative SinkBinding or ContainerSource injects (the
// command resolves it).
//
// Only syncs that moved the pointer emit: Published (new content) and Reused
// (stored content made current again). UpToDate does not, since nothing a
// consumer sees changed; a poll every few minutes would otherwise flood the
// sink with no-ops.
//
// Delivery never fails or slows a sync: events go to a bounded queue and
// one background sender retries each a few times with backoff. When the
// queue is full the oldest event is dropped and counted; Stats exposes the
// counters for metrics.
package publishevent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/catalogsync/catalogsync/internal/cehttp"
	"github.com/catalogsync/catalogsync/sync/backoff"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// Type is the CloudEvents type of a published-catalog event.
const Type = "io.catalogsync.catalog.published"

var (
	// ErrInvalidSink is returned for a sink that is not an absolute http(s) URL.
	ErrInvalidSink = errors.New("invalid event sink")
	// ErrNotDelivered wraps the last failure of an event given up on.
	ErrNotDelivered = errors.New("event not delivered")
)

// Data is the event's JSON payload.
type Data struct {
	Catalog     string `json:"catalog"`
	Image       string `json:"image"`
	Digest      string `json:"digest"`
	ResolvedRef string `json:"resolvedRef"`
	// URL is where the catalog is served (base URL + /catalogs/<name>);
	// empty without a configured base URL.
	URL     string `json:"url,omitempty"`
	Action  string `json:"action"`
	Objects int    `json:"objects"`
	// PhasesMs holds each phase's duration in milliseconds.
	PhasesMs   map[string]int64 `json:"phasesMs"`
	DurationMs int64            `json:"durationMs"`
	Time       time.Time        `json:"time"`
}

// Stats counts what happened to events. Attempts that failed but were
// retried count in Retries; events given up on in Failed.
type Stats struct {
	Sent    uint64
	Retries uint64
	Failed  uint64
	Dropped uint64
	Queued  int
}

// Option configures an Emitter.
type Option func(*Emitter)

// WithSource sets the CloudEvents source (default catalogsync/<hostname>).
func WithSource(s string) Option { return func(e *Emitter) { e.source = s } }

// WithBaseURL sets the service's external base URL, for Data.URL.
func WithBaseURL(u string) Option {
	return func(e *Emitter) { e.baseURL = strings.TrimSuffix(u, "/") }
}

// WithQueue sets how many events may wait (default 256).
func WithQueue(n int) Option {
	return func(e *Emitter) {
		if n > 0 {
			e.queueCap = n
		}
	}
}

// WithRetry sets the attempts per event (default 5) and the first backoff,
// about doubled after each failure, with jitter (default 500ms).
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(e *Emitter) {
		if attempts > 0 {
			e.attempts = attempts
		}
		if backoff > 0 {
			e.backoff = backoff
		}
	}
}

// WithTimeout bounds one delivery attempt (default 10s), so a sink that
// accepts connections and never answers cannot hold the queue forever.
func WithTimeout(d time.Duration) Option {
	return func(e *Emitter) {
		if d > 0 {
			e.timeout = d
		}
	}
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(e *Emitter) { e.log = l } }

// Emitter is a pipeline.Observer sending published-catalog events.
type Emitter struct {
	sink     string
	source   string
	baseURL  string
	queueCap int
	attempts int
	backoff  time.Duration
	timeout  time.Duration
	log      *slog.Logger
	client   *http.Client

	mu      sync.Mutex
	queue   []event.Event
	stats   Stats
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped bool
}

// New returns an Emitter sending to sink and starts its sender; Close
// stops it.
func New(sink string, opts ...Option) (*Emitter, error) {
	u, err := url.Parse(sink)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w %q: want an http(s) URL", ErrInvalidSink, sink)
	}
	host, _ := os.Hostname()
	e := &Emitter{
		sink: sink, source: "catalogsync/" + host,
		queueCap: 256, attempts: 5, backoff: 500 * time.Millisecond, timeout: 10 * time.Second,
		log:  slog.New(slog.DiscardHandler),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, fn := range opts {
		fn(e)
	}
	e.client = &http.Client{Timeout: e.timeout}
	go e.run()
	return e, nil
}

// Observe queues an event for a sync that published; it never blocks on
// the sink.
func (e *Emitter) Observe(ev pipeline.Event) {
	r := ev.Result
	if ev.Phase != pipeline.PhasePublished || r == nil || (r.Action != pipeline.ActionPublished && r.Action != pipeline.ActionReused) {
		return
	}
	d := Data{
		Catalog: r.Catalog, Image: r.Image, Digest: r.Digest, ResolvedRef: r.ResolvedRef,
		Action: string(r.Action), Objects: r.Meta.Objects,
		PhasesMs: map[string]int64{}, DurationMs: r.Duration.Milliseconds(), Time: ev.Time,
	}
	if e.baseURL != "" {
		d.URL = e.baseURL + "/catalogs/" + r.Catalog
	}
	for ph, dur := range r.Phases {
		d.PhasesMs[string(ph)] = dur.Milliseconds()
	}
	ce := event.New()
	// One ID per publish, kept across retries, so a sink can deduplicate.
	ce.SetID(rand.Text())
	ce.SetType(Type)
	ce.SetSource(e.source)
	ce.SetSubject(r.Catalog)
	ce.SetTime(ev.Time)
	if err := ce.SetData(event.ApplicationJSON, d); err != nil {
		e.log.Warn("published event not encodable", "catalog", r.Catalog, "err", err)
		return
	}
	e.mu.Lock()
	if e.stopped {
		e.stats.Dropped++
		e.mu.Unlock()
		return
	}
	if len(e.queue) >= e.queueCap {
		// The newest state matters most to consumers; the oldest goes.
		e.queue = e.queue[1:]
		e.stats.Dropped++
	}
	e.queue = append(e.queue, ce)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (e *Emitter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Queued = len(e.queue)
	return s
}

// Close stops the sender after it delivered what is queued or ctx ended;
// what is left is counted as dropped.
func (e *Emitter) Close(ctx context.Context) error {
	e.mu.Lock()
	if !e.stopped {
		e.stopped = true
		close(e.stop)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Emitter) next() (event.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return event.Event{}, false
	}
	ev := e.queue[0]
	e.queue = e.queue[1:]
	return ev, true
}

func (e *Emitter) run() {
	defer close(e.done)
	// Attempts are bounded by their own timeout; Close waits for the
	// drain as long as its ctx allows.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		ev, ok := e.next()
		if !ok {
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		e.deliver(ctx, ev)
	}
}

func (e *Emitter) deliver(ctx context.Context, ev event.Event) {
	// Capped so the last wait is the first doubled once per retry.
	b := backoff.Backoff{Min: e.backoff, Max: e.backoff << max(e.attempts-2, 0)}
	var err error
	for attempt := 1; attempt <= e.attempts; attempt++ {
		if err = e.send(ctx, ev); err == nil {
			e.count(func(s *Stats) { s.Sent++ })
			return
		}
		if attempt == e.attempts {
			break
		}
		e.count(func(s *Stats) { s.Retries++ })
		select {
		case <-time.After(b.Delay(attempt-1, 0)):
		case <-e.stop:
			// Closing: one last try per event, no more waiting.
			attempt = e.attempts - 1
		}
	}
	e.count(func(s *Stats) { s.Failed++ })
	e.log.Warn("published event not delivered", "catalog", ev.Subject(), "sink", e.sink,
		"err", fmt.Errorf("%w: %w", ErrNotDelivered, err))
}

func (e *Emitter) send(ctx context.Context, ev event.Event) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.sink, nil)
	if err != nil {
		return err
	}
	// Binary mode: attributes as ce-* headers, the data as the body.
	if err := cehttp.WriteBinary(ctx, &ev, req); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // best-effort drain for connection reuse
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("sink answered %s", resp.Status)
	}
	return nil
}

func (e *Emitter) count(fn func(*Stats)) {
	e.mu.Lock()
	fn(&e.stats)
	e.mu.Unlock()
}
