package mirrorsets

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/catalogsync/catalogsync/internal/kubeinformer"
	"github.com/catalogsync/catalogsync/internal/regconf"
)

// GroupVersion is the API group and version of the mirror sets.
const GroupVersion = "config.openshift.io/v1"

var resources = map[Kind]string{Digest: "imagedigestmirrorsets", Tag: "imagetagmirrorsets"}

// Watcher keeps a regconf.Live at the registries.conf file's rules merged
// with the cluster's mirror sets. It implements source.Mirrors.
type Watcher struct {
	dyn  dynamic.Interface
	disc Discovery
	base *regconf.Config
	log  *slog.Logger
	live regconf.Live

	mu      sync.Mutex
	stores  map[Kind]cache.Store
	version uint64
	// warned holds the skipped objects' resourceVersions by kind and
	// name, and over the object counts over MaxObjects, so a bad object is
	// logged once per edit, not at every rebuild.
	warned map[Kind]map[string]string
	over   map[Kind]int
}

// New returns a Watcher whose rules are base's (the registries.conf file,
// may be nil) plus the cluster's; Start follows the cluster.
func New(dyn dynamic.Interface, disc Discovery, base *regconf.Config, log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{dyn: dyn, disc: disc, base: base, log: log, stores: map[Kind]cache.Store{},
		warned: map[Kind]map[string]string{}, over: map[Kind]int{}}
	w.live.Store(base.Merge(nil))
	return w
}

// Endpoints implements source.Mirrors with the rules in force.
func (w *Watcher) Endpoints(name string, byDigest bool) ([]regconf.Endpoint, error) {
	return w.live.Endpoints(name, byDigest)
}

// Version counts the rebuilds of the rules (tests wait on it).
func (w *Watcher) Version() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.version
}

// Start follows the kinds the cluster serves until ctx ends, and returns
// once both are listed or wait has passed. A cluster that serves neither
// is not an error: the file's rules stay, and one line says so.
func (w *Watcher) Start(ctx context.Context, wait time.Duration) error {
	kinds, err := w.served()
	if err != nil {
		return err
	}
	if len(kinds) == 0 {
		w.log.Info("the cluster serves no ImageDigestMirrorSet or ImageTagMirrorSet; only registries.conf mirrors apply", "group", GroupVersion)
		return nil
	}
	gv := schema.GroupVersion{Group: "config.openshift.io", Version: "v1"}
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf := kubeinformer.New(w.dyn, gv.WithResource(resources[k]), "", 0, nil)
		w.mu.Lock()
		w.stores[k] = inf.GetStore()
		w.mu.Unlock()
		h := func(any) { w.rebuild() }
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: h, UpdateFunc: func(_, o any) { h(o) }, DeleteFunc: h,
		}); err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
		go inf.Run(ctx.Done())
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		return fmt.Errorf("image mirror sets: not listed within %s (may the service get, list and watch %s in %s?)", wait, strings.Join(resourceNames(kinds), " and "), gv.Group)
	}
	w.rebuild()
	return nil
}

// served asks discovery which of the two kinds the cluster serves.
func (w *Watcher) served() ([]Kind, error) {
	list, err := w.disc.ServerResourcesForGroupVersion(GroupVersion)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image mirror sets: discovery of %s: %w", GroupVersion, err)
	}
	var kinds []Kind
	for _, k := range []Kind{Digest, Tag} {
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resources[k] }) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

func resourceNames(kinds []Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = resources[k]
	}
	return out
}

// rebuild reads every object the informers hold and puts the merged rules
// in force. Objects are few and small (bounded), so all are re-read.
func (w *Watcher) rebuild() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sets []Set
	for _, k := range []Kind{Digest, Tag} {
		st := w.stores[k]
		if st == nil {
			continue
		}
		sets = append(sets, w.parseAll(k, st.List())...)
	}
	slices.SortFunc(sets, func(a, b Set) int { return strings.Compare(sortKey(a), sortKey(b)) })
	rules := Rules(sets)
	cfg := w.base.Merge(rules)
	changed := !reflect.DeepEqual(cfg, w.live.Load())
	w.live.Store(cfg)
	w.version++
	if changed {
		w.log.Info("image mirror sets applied", "sets", len(sets), "sources", len(rules))
	}
}

func (w *Watcher) parseAll(k Kind, objs []any) []Set {
	var us []*unstructured.Unstructured
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			us = append(us, u)
		}
	}
	// By name, so which objects are over the bound does not change.
	slices.SortFunc(us, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	if n := len(us); n > MaxObjects {
		if w.over[k] != n {
			w.log.Warn("too many image mirror sets; the last by name are ignored", "kind", k, "max", MaxObjects, "objects", n)
		}
		w.over[k], us = n, us[:MaxObjects]
	} else {
		w.over[k] = 0
	}
	warned := map[string]string{}
	var sets []Set
	for _, u := range us {
		s, err := Parse(k, u)
		if err != nil {
			if rv := u.GetResourceVersion(); w.warned[k][u.GetName()] != rv {
				w.log.Warn("image mirror set skipped", "kind", k, "name", u.GetName(), "err", err)
			}
			warned[u.GetName()] = u.GetResourceVersion()
			continue
		}
		sets = append(sets, s)
	}
	w.warned[k] = warned
	return sets
}
