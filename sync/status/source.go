package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	stdsync "sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	csync "github.com/catalogsync/catalogsync/sync"
)

var (
	// ErrMalformed is returned for a ClusterCatalog whose fields do not
	// have the types of the v1 schema.
	ErrMalformed = errors.New("malformed ClusterCatalog")
	// ErrNotSynced is returned by WaitForSync when ctx ends before the
	// first complete list.
	ErrNotSynced = errors.New("ClusterCatalogs not listed yet")
)

// Source lists and watches ClusterCatalogs and keeps the current set in
// memory: an informer on the dynamic client. It relists when the watch
// expires and keeps retrying, with backoff, while the apiserver is away;
// meanwhile it answers from the last state it saw.
type Source struct {
	res      dynamic.NamespaceableResourceInterface
	onChange func(name string)
	log      *slog.Logger
	backoff  csync.Backoff

	mu     stdsync.RWMutex
	objs   map[string]object
	synced chan struct{} // closed after the first complete list
	subs   []func(name string, ev sourceEvent)
}

// sourceEvent tells subscribers why a name is reported.
type sourceEvent int

const (
	evUpdate    sourceEvent = iota // added, changed or deleted
	evReachable                    // the apiserver answers again after failures
)

// SourceOption configures a Source.
type SourceOption func(*Source)

// WithOnChange sets the hook called with a catalog's name when it is
// created, when its spec changes (a new generation) and when it is
// deleted, so the service can sync (or stop) at once. It is a nudge, not
// the data: read the catalog with Get. It runs on the watch goroutine and
// must not block.
func WithOnChange(f func(name string)) SourceOption { return func(s *Source) { s.onChange = f } }

// WithSourceLogger sets the logger.
func WithSourceLogger(l *slog.Logger) SourceOption { return func(s *Source) { s.log = l } }

// WithWatchBackoff sets the retry delays after list or watch failures
// (default 200 ms to 10 s).
func WithWatchBackoff(b csync.Backoff) SourceOption { return func(s *Source) { s.backoff = b } }

// NewSource returns a Source of the ClusterCatalogs client reaches. Call
// Run to start it.
func NewSource(client dynamic.Interface, opts ...SourceOption) *Source {
	s := &Source{
		res:     client.Resource(GVR),
		log:     slog.New(slog.DiscardHandler),
		backoff: csync.Backoff{Min: 200 * time.Millisecond, Max: 10 * time.Second},
		objs:    map[string]object{},
		synced:  make(chan struct{}),
	}
	for _, fn := range opts {
		fn(s)
	}
	return s
}

// Run lists and watches ClusterCatalogs until ctx ends, and returns
// ctx's error.
func (s *Source) Run(ctx context.Context) error {
	failures := 0
	failed := false
	for ctx.Err() == nil {
		rv, err := s.list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.logFailure(ctx, failures, "list ClusterCatalogs", err)
			failed = true
			s.sleep(ctx, s.backoff.Delay(failures, 0))
			failures++
			continue
		}
		if failed {
			s.broadcastReachable()
			failed = false
		}
		failures = 0
		// Watch from the list's version until it expires; a broken watch
		// resumes from the last version seen.
		for ctx.Err() == nil {
			start := time.Now()
			next, err := s.watch(ctx, rv, failed)
			if next != "" {
				rv = next
			}
			if err == nil {
				failures, failed = 0, false
				if time.Since(start) < time.Second {
					// Closed at once (a server shutting down): do not spin.
					s.sleep(ctx, s.backoff.Min)
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				s.log.Debug("watch expired, relisting", "err", err)
				break
			}
			s.logFailure(ctx, failures, "watch ClusterCatalogs", err)
			failed = true
			s.sleep(ctx, s.backoff.Delay(failures, 0))
			failures++
			if failures > 3 {
				// Many failures in a row: the version may be gone too,
				// and a fresh list is cheap.
				break
			}
		}
	}
	return ctx.Err()
}

// logFailure warns of the first failure of a series and of every 20th,
// so an outage does not flood the log.
func (s *Source) logFailure(ctx context.Context, failures int, msg string, err error) {
	lvl := slog.LevelDebug
	if failures == 0 || failures%20 == 0 {
		lvl = slog.LevelWarn
	}
	s.log.Log(ctx, lvl, msg, "failures", failures+1, "err", err)
}

func (s *Source) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// list reads every ClusterCatalog, replaces the set, and returns the list's
// resourceVersion to watch from.
func (s *Source) list(ctx context.Context) (string, error) {
	fresh := map[string]object{}
	opts := metav1.ListOptions{Limit: 500}
	var rv string
	for {
		l, err := s.res.List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", GVR.Resource, err)
		}
		for i := range l.Items {
			o, err := parseObject(&l.Items[i])
			if err != nil {
				s.log.Warn("ignoring ClusterCatalog", "err", err)
				continue
			}
			fresh[o.cat.Name] = o
		}
		rv = l.GetResourceVersion()
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	s.mu.Lock()
	old := s.objs
	s.objs = fresh
	var changed, touched []string
	for name, o := range fresh {
		prev, ok := old[name]
		if !ok || prev.cat != o.cat {
			changed = append(changed, name)
		}
		if !ok || prev.rv != o.rv {
			touched = append(touched, name)
		}
	}
	for name := range old {
		if _, ok := fresh[name]; !ok {
			changed = append(changed, name)
			touched = append(touched, name)
		}
	}
	select {
	case <-s.synced:
	default:
		close(s.synced)
	}
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	slices.Sort(changed)
	for _, name := range changed {
		s.notifyChange(name)
	}
	for _, name := range touched {
		for _, f := range subs {
			f(name, evUpdate)
		}
	}
	return rv, nil
}

// watch follows changes from rv until the watch ends, and returns the last
// version seen. A nil error means the server closed the watch normally.
func (s *Source) watch(ctx context.Context, rv string, afterFailure bool) (string, error) {
	// The server ends a watch after this long; a random spread keeps
	// replicas from re-watching together.
	timeout := int64(240 + rand.IntN(120))
	w, err := s.res.Watch(ctx, metav1.ListOptions{
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if err != nil {
		return "", fmt.Errorf("watch %s: %w", GVR.Resource, err)
	}
	defer w.Stop()
	if afterFailure {
		s.broadcastReachable()
	}
	last := ""
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, nil
			}
			switch ev.Type {
			case watch.Error:
				return last, fmt.Errorf("watch %s: %w", GVR.Resource, apierrors.FromObject(ev.Object))
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					last = u.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				last = u.GetResourceVersion()
				s.apply(ev.Type, u)
			}
		}
	}
}

// apply records one watch event and tells whoever listens.
func (s *Source) apply(t watch.EventType, u *unstructured.Unstructured) {
	name := u.GetName()
	s.mu.Lock()
	prev, existed := s.objs[name]
	changed := false
	if t == watch.Deleted {
		delete(s.objs, name)
		changed = existed
	} else {
		o, err := parseObject(u)
		if err != nil {
			s.mu.Unlock()
			s.log.Warn("ignoring ClusterCatalog", "err", err)
			return
		}
		s.objs[name] = o
		changed = !existed || prev.cat != o.cat
	}
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	if changed {
		s.notifyChange(name)
	}
	for _, f := range subs {
		f(name, evUpdate)
	}
}

// notifyChange calls the OnChange hook for a create, a spec change or a
// delete. Status and label updates do not change Catalog, so they do not
// call it.
func (s *Source) notifyChange(name string) {
	if s.onChange != nil {
		s.onChange(name)
	}
}

func (s *Source) broadcastReachable() {
	s.mu.RLock()
	names := make([]string, 0, len(s.objs))
	for name := range s.objs {
		names = append(names, name)
	}
	subs := slices.Clone(s.subs)
	s.mu.RUnlock()
	for _, name := range names {
		for _, f := range subs {
			f(name, evReachable)
		}
	}
}

// subscribe registers f for every event of every catalog.
func (s *Source) subscribe(f func(name string, ev sourceEvent)) {
	s.mu.Lock()
	s.subs = append(s.subs, f)
	s.mu.Unlock()
}

// WaitForSync blocks until the first complete list, or ctx ends.
func (s *Source) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNotSynced, ctx.Err())
	}
}

// Synced reports whether the first complete list is done.
func (s *Source) Synced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Get returns the named catalog as last seen.
func (s *Source) Get(name string) (Catalog, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objs[name]
	return o.cat, ok
}

// get returns everything kept of the named catalog.
func (s *Source) get(name string) (object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objs[name]
	return o, ok
}

// List returns every ClusterCatalog, sorted by name.
func (s *Source) List() []Catalog {
	s.mu.RLock()
	out := make([]Catalog, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o.cat)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Catalog) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Catalogs returns the catalogs to keep synced: every ClusterCatalog
// except those with availabilityMode Unavailable, which catalogd does not
// unpack either. It makes a Source a sync.CatalogSet.
func (s *Source) Catalogs() []csync.Catalog {
	var out []csync.Catalog
	for _, c := range s.List() {
		if !c.Unavailable() {
			out = append(out, c.SyncCatalog())
		}
	}
	return out
}

// Names returns the name of every ClusterCatalog (Unavailable ones too:
// their content is kept for when they come back), for the garbage
// collector. ok is false until the first list completed: an empty set
// then means "not known yet", and must not make anything deletable.
func (s *Source) Names() (names []string, ok bool) {
	if !s.Synced() {
		return nil, false
	}
	names = []string{} // non-nil: an empty set is a known one
	for _, c := range s.List() {
		names = append(names, c.Name)
	}
	return names, true
}

// Available reports whether the named catalog's content may be served: it
// exists and is not set Unavailable. It is the content handler's
// availability hook. Before the first list it reports false.
func (s *Source) Available(name string) bool {
	c, ok := s.Get(name)
	return ok && !c.Unavailable()
}
