package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/catalogsync/catalogsync/internal/kubeinformer"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

var (
	// ErrMalformed is returned for a ClusterCatalog whose fields do not
	// have the types of the v1 schema.
	ErrMalformed = errors.New("malformed ClusterCatalog")
	// ErrNotSynced is returned by WaitForSync when ctx ends before the
	// first complete list.
	ErrNotSynced = errors.New("ClusterCatalogs not listed yet")
)

// DefaultResync is how often the informer replays every ClusterCatalog to
// its handlers, so the Writer re-reads each published pointer even when
// nothing in the cluster changed (another replica's GC, a lost event).
const DefaultResync = 10 * time.Minute

// ClusterCatalogs keeps the cluster's ClusterCatalogs: a client-go shared informer
// on the dynamic client (list, watch, relist when the watch expires,
// backoff while the apiserver is away), answering from its cache.
type ClusterCatalogs struct {
	inf      cache.SharedIndexInformer
	onChange func(name string)
	log      *slog.Logger
	resync   time.Duration

	mu   sync.RWMutex
	subs []func(name string)

	images imageCache
}

// imageCache keeps each ClusterCatalog's parsed image reference, by
// name: every lookup reads the object again from the informer's cache,
// and the reference is parsed only when it changed.
type imageCache struct {
	mu sync.Mutex
	m  map[string]catalogspec.Image
}

func (c *imageCache) parse(name, ref string) catalogspec.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	if img, ok := c.m[name]; ok && img.String() == ref {
		return img
	}
	img := catalogspec.ParseImage(ref)
	if c.m == nil {
		c.m = map[string]catalogspec.Image{}
	}
	c.m[name] = img
	return img
}

func (c *imageCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}

// parse reads u with the image reference parsed once per change.
func (s *ClusterCatalogs) parse(u *unstructured.Unstructured) (object, error) {
	return parseObjectWith(u, s.images.parse)
}

// ClusterCatalogsOption configures a ClusterCatalogs.
type ClusterCatalogsOption func(*ClusterCatalogs)

// WithOnChange sets the hook called with a catalog's name when it is
// created, when its spec changes (a new generation) and when it is
// deleted, so the service can sync (or stop) at once. It is a nudge, not
// the data: read the catalog with Get. It runs on the informer's
// goroutine and must not block.
func WithOnChange(f func(name string)) ClusterCatalogsOption {
	return func(s *ClusterCatalogs) { s.onChange = f }
}

// WithClusterCatalogsLogger sets the logger.
func WithClusterCatalogsLogger(l *slog.Logger) ClusterCatalogsOption {
	return func(s *ClusterCatalogs) { s.log = l }
}

// WithResync sets the informer's resync period (DefaultResync; 0: none).
func WithResync(d time.Duration) ClusterCatalogsOption {
	return func(s *ClusterCatalogs) { s.resync = d }
}

// NewClusterCatalogs returns the ClusterCatalogs that client reaches. Call
// Run to start it.
func NewClusterCatalogs(client dynamic.Interface, opts ...ClusterCatalogsOption) *ClusterCatalogs {
	s := &ClusterCatalogs{log: slog.New(slog.DiscardHandler), resync: DefaultResync}
	for _, fn := range opts {
		fn(s)
	}
	s.inf = kubeinformer.New(client, GVR, "", s.resync, nil)
	failures := 0
	_ = s.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		// The reflector retries with its own backoff; say so once per
		// series (and every 20th) so an outage does not flood the log.
		failures++
		lvl := slog.LevelDebug
		if failures == 1 || failures%20 == 0 {
			lvl = slog.LevelWarn
		}
		s.log.Log(ctx, lvl, "list/watch ClusterCatalogs failed; retrying", "failures", failures, "err", err)
	})
	_, _ = s.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.changed(nil, obj) },
		UpdateFunc: func(old, obj any) { s.changed(old, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				s.images.forget(u.GetName())
				s.notifyChange(u.GetName())
				s.broadcast(u.GetName())
			}
		},
	})
	return s
}

// changed handles an add, an update or a resync (old has the same
// resourceVersion): OnChange hears of creations and spec changes only,
// subscribers of everything.
func (s *ClusterCatalogs) changed(old, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	o, err := s.parse(u)
	if err != nil {
		s.log.Warn("ignoring ClusterCatalog", "err", err)
		return
	}
	notify := true
	if ou, ok := old.(*unstructured.Unstructured); ok {
		if prev, err := parseObject(ou); err == nil && prev.cat == o.cat {
			notify = false // status, labels, or a resync
		}
	}
	if notify {
		s.notifyChange(o.cat.Name)
	}
	s.broadcast(o.cat.Name)
}

func (s *ClusterCatalogs) broadcast(name string) {
	s.mu.RLock()
	subs := slices.Clone(s.subs)
	s.mu.RUnlock()
	for _, f := range subs {
		f(name)
	}
}

// Run runs the informer until ctx ends, and returns ctx's error.
func (s *ClusterCatalogs) Run(ctx context.Context) error {
	s.inf.Run(ctx.Done())
	return ctx.Err()
}

// notifyChange calls the OnChange hook for a create, a spec change or a
// delete. Status and label updates do not change Catalog, so they do not
// call it.
func (s *ClusterCatalogs) notifyChange(name string) {
	if s.onChange != nil {
		s.onChange(name)
	}
}

// subscribe registers f for every event of every catalog (resyncs too).
func (s *ClusterCatalogs) subscribe(f func(name string)) {
	s.mu.Lock()
	s.subs = append(s.subs, f)
	s.mu.Unlock()
}

// WaitForSync blocks until the informer's first complete list, or ctx
// ends.
func (s *ClusterCatalogs) WaitForSync(ctx context.Context) error {
	// Polled every few milliseconds, not cache.WaitForCacheSync's 100: a
	// process started for a request (scale from zero) waits for this.
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !s.inf.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotSynced, context.Cause(ctx))
		case <-t.C:
		}
	}
	return nil
}

// Synced reports whether the first complete list is done: the readiness
// of a service in ClusterCatalog mode.
func (s *ClusterCatalogs) Synced() bool { return s.inf.HasSynced() }

// Get returns the named catalog as last seen.
func (s *ClusterCatalogs) Get(name string) (ClusterCatalog, bool) {
	o, ok := s.get(name)
	return o.cat, ok
}

// get returns everything kept of the named catalog.
func (s *ClusterCatalogs) get(name string) (object, bool) {
	item, ok, err := s.inf.GetStore().GetByKey(name)
	if err != nil || !ok {
		return object{}, false
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return object{}, false
	}
	o, err := s.parse(u)
	if err != nil {
		return object{}, false
	}
	return o, true
}

// List returns every ClusterCatalog, sorted by name.
func (s *ClusterCatalogs) List() []ClusterCatalog {
	var out []ClusterCatalog
	for _, item := range s.inf.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if o, err := s.parse(u); err == nil {
			out = append(out, o.cat)
		}
	}
	slices.SortFunc(out, func(a, b ClusterCatalog) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Catalogs returns the catalogs to keep synced: every ClusterCatalog
// except those with availabilityMode Unavailable, which catalogd does not
// unpack either. It makes ClusterCatalogs an engine.CatalogSet.
func (s *ClusterCatalogs) Catalogs() []catalogspec.Catalog {
	var out []catalogspec.Catalog
	for _, c := range s.List() {
		if !c.Unavailable() {
			out = append(out, c.Catalog)
		}
	}
	return out
}

// Names returns the name of every ClusterCatalog (Unavailable ones too:
// their content is kept for when they come back), for the garbage
// collector. ok is false until the first list completed: an empty set
// then means "not known yet", and must not make anything deletable.
func (s *ClusterCatalogs) Names() (names []string, ok bool) {
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
func (s *ClusterCatalogs) Available(name string) bool {
	c, ok := s.Get(name)
	return ok && !c.Unavailable()
}
