package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/backoff"
)

var (
	// ErrRunning is returned by a second call of Writer.Run.
	ErrRunning = errors.New("status writer already running")
	// ErrBaseURL is returned by NewWriter for a base URL that the CRD
	// would refuse in status.urls.base.
	ErrBaseURL = errors.New("base URL must be an absolute http or https URL")
)

// Writer reports syncs in ClusterCatalog status. It implements
// pipeline.Observer (and pipeline.WaitObserver, pipeline.Flusher): give
// it to engine.WithObservers. Events update each catalog's desired
// status in memory and queue the catalog on a client-go rate-limited
// workqueue; a fixed number of workers apply it with server-side apply on
// the status subresource, only when something changed, and at most about
// once per MinInterval per catalog while a phase reports bytes. A failed
// apply is retried with the queue's per-item backoff; it never holds up a
// sync.
//
// Two field managers share the status. The Progressing condition is this
// replica's (manager "<manager>/<replica>") and is written only for syncs
// this process runs, which hold the catalog's sync lease: one writer at a
// time. Serving, resolvedSource, urls and lastUnpacked follow from the
// published pointer in storage, are the same whoever computes them
// (manager "<manager>"), and any replica writes them. Every apply carries
// the resourceVersion it was computed from, so a stale view is refused
// (and recomputed) instead of moving the status back.
type Writer struct {
	res      applier
	view     catalogView
	baseURL  string
	manager  string
	replica  string
	interval time.Duration
	quiet    time.Duration
	backoff  backoff.Backoff
	timeout  time.Duration
	workers  int
	log      *slog.Logger
	now      func() time.Time
	onOther  func(name, why string)
	// followOnly: Progressing follows from the pointer (WithFollowOnly).
	followOnly bool

	queue workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	running bool
	entries map[string]*entry
	stats   Stats
}

// Stats counts the Writer's requests.
type Stats struct {
	// Applies is how many status applies succeeded; Failures how many
	// failed (each is retried); Conflicts how many were refused because
	// the object had changed since it was read (recomputed, not counted
	// as failures).
	Applies, Failures, Conflicts int64
	// Labels is how many label applies succeeded.
	Labels int64
	// LeftAlone counts catalogs found managed by another controller
	// (catalogd), whose status this Writer does not touch.
	LeftAlone int64
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithFieldManager sets the server-side apply field manager
// (DefaultFieldManager otherwise).
func WithFieldManager(m string) WriterOption { return func(w *Writer) { w.manager = m } }

// WithWriterReplica names this replica in the manager of the Progressing
// condition (default: the host name).
func WithWriterReplica(id string) WriterOption {
	return func(w *Writer) {
		if id != "" {
			w.replica = id
		}
	}
}

// WithMinInterval sets the least time between two applies of one catalog
// that only update the same phase, e.g. byte counts (default 1 s).
func WithMinInterval(d time.Duration) WriterOption { return func(w *Writer) { w.interval = d } }

// WithQuietPeriod sets how long a new sync of a catalog that has settled
// (succeeded, retrying or blocked) at its current generation runs before
// its progress is shown (default 1 s). Polls that find nothing new and
// retries that fail the same way again finish within it and write
// nothing, so they do not churn the status.
func WithQuietPeriod(d time.Duration) WriterOption { return func(w *Writer) { w.quiet = d } }

// WithApplyBackoff sets the retry delays after a failed apply (default
// 200 ms to 5 s).
func WithApplyBackoff(b backoff.Backoff) WriterOption { return func(w *Writer) { w.backoff = b } }

// WithRequestTimeout bounds each request to the apiserver and to storage
// (default 10 s).
func WithRequestTimeout(d time.Duration) WriterOption { return func(w *Writer) { w.timeout = d } }

// WithWorkers sets how many catalogs are written at once (default 4).
func WithWorkers(n int) WriterOption {
	return func(w *Writer) {
		if n > 0 {
			w.workers = n
		}
	}
}

// WithWriterLogger sets the logger.
func WithWriterLogger(l *slog.Logger) WriterOption { return func(w *Writer) { w.log = l } }

// WithLeftAlone calls f once when a catalog is found managed by another
// controller (catalogd), with the reason; the Writer then leaves its
// status alone. For a metric.
func WithLeftAlone(f func(name, why string)) WriterOption { return func(w *Writer) { w.onOther = f } }

// NewWriter returns a Writer for the ClusterCatalogs of src, reading
// published pointers from store. baseURL is where this service serves
// catalogs, without the "/catalogs" path (e.g.
// "https://catalogsync.olmv1-system.svc"): status.urls.base is
// baseURL + "/catalogs/" + name. Call Run to start writing.
func NewWriter(client dynamic.Interface, src *ClusterCatalogs, store storage.Store, baseURL string, opts ...WriterOption) (*Writer, error) {
	// Checked now: the apiserver would refuse every status with a bad one.
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBaseURL, baseURL)
	}
	host, _ := os.Hostname()
	w := &Writer{
		view:     clusterView{src: src, store: store},
		baseURL:  strings.TrimRight(baseURL, "/"),
		manager:  DefaultFieldManager,
		replica:  cmp.Or(host, "catalogsync"),
		interval: time.Second,
		quiet:    time.Second,
		backoff:  backoff.Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second},
		timeout:  10 * time.Second,
		workers:  4,
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		entries:  map[string]*entry{},
	}
	if client != nil { // nil only in this package's tests, with fakes
		w.res = client.Resource(GVR)
	}
	for _, fn := range opts {
		fn(w)
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](w.backoff.Min, w.backoff.Max),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "clustercatalog-status"})
	if src != nil {
		src.subscribe(w.sourceEvent)
	}
	return w, nil
}

// applier is what the Writer asks of the apiserver: server-side apply of
// a ClusterCatalog's status, and of its labels.
type applier interface {
	ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error)
	Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// catalogView is what the Writer reads: a ClusterCatalog as last seen,
// and its published pointer (storage.ErrNotExist when there is none).
type catalogView interface {
	get(name string) (object, bool)
	pointer(ctx context.Context, name string) (catalog.Pointer, error)
}

// clusterView reads ClusterCatalogs from a ClusterCatalogs and pointers from a
// store.
type clusterView struct {
	src   *ClusterCatalogs
	store storage.Store
}

func (v clusterView) get(name string) (object, bool) { return v.src.get(name) }

func (v clusterView) pointer(ctx context.Context, name string) (catalog.Pointer, error) {
	p, _, err := catalog.Current(ctx, v.store, name)
	return p, err
}

// progressManager owns the Progressing condition this replica writes.
func (w *Writer) progressManager() string { return w.manager + "/" + w.replica }

// entry is the Writer's state of one catalog. Fields are guarded by
// Writer.mu, except those marked worker-only: the workqueue hands a
// catalog to one worker at a time.
type entry struct {
	name string

	live    *progress // the running sync's latest state
	waiting *progress // what a sync not started yet waits for
	outcome *progress // how the last sync ended
	// attemptGen and attemptStart are the generation the latest sync
	// started at, and its first event's time; endedAt is when it ended
	// and flushed how far the status has caught up with the ends.
	attemptGen   int64
	attemptStart time.Time
	endedAt      time.Time
	flushed      time.Time
	// late: the sync ended but its end was not written before the lease
	// went to the next holder; written only if nobody else wrote since.
	late bool
	// yielded: the end, up to date, was held back for another replica's
	// report of a running sync; written once that report is older than a
	// lease, dropped once that replica reports an end.
	yielded bool
	// holdUntil delays showing a new sync of a settled catalog.
	holdUntil time.Time
	ptrStale  bool     // read the pointer again before rendering
	applied   *Status  // the status the server has, as our last apply returned it
	appliedRV string   // its resourceVersion
	appliedBy owner    // who owns its Progressing condition
	ours      []string // resourceVersions our applies produced
	other     string   // why another controller manages it ("" if none)
	waitShown bool     // a wait of the sync to come is on the status

	labelDone bool // our label apply succeeded (reset when someone removes it)

	// Worker-only.
	failures      int
	ptr           pointerState
	ptrFailures   int
	labelFailures int
	labelRetry    time.Time
	appliedKey    string
	appliedAt     time.Time
}

// progress is the Progressing condition a sync event asks for.
type progress struct {
	status     metav1.ConditionStatus
	reason     string
	message    string
	generation int64
	// key names the kind of state (a phase, a layer, an outcome): a new
	// key is written at once, an update of the same key at most every
	// MinInterval.
	key    string
	digest string
	failed bool
	// upToDate: nothing happened; keep the message of the sync that did
	// the work, as the status has it when written.
	upToDate bool
}

type pointerState struct {
	known  bool
	exists bool
	p      catalog.Pointer
	readAt time.Time
}

// Stats returns the request counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func (w *Writer) entryLocked(name string) *entry {
	en := w.entries[name]
	if en == nil {
		en = &entry{name: name, ptrStale: true}
		w.entries[name] = en
	}
	return en
}

func (w *Writer) signal(en *entry) { w.queue.Add(en.name) }

func (s *soonest) add(d time.Duration) {
	if d > 0 && (*s == 0 || d < time.Duration(*s)) {
		*s = soonest(d)
	}
}
