// Package kubeinformer makes client-go informers on the dynamic client.
// client-go's dynamicinformer does the same, but its types come from the
// typed informers package, which links every API group's clientset,
// informers and listers (about 230 packages, and their init) into the
// binary.
package kubeinformer

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// New returns an informer of the objects of gvr in namespace ns (""
// for all, or a cluster-scoped resource), listed and watched with the
// options tweak sets (may be nil), replayed every resync (0: never).
// Run it with its Run method.
func New(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, resync time.Duration, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	res := dyn.Resource(gvr).Namespace(ns)
	opts := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts(o))
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, dyn), &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{}, ObjectDescription: gvr.String()})
}
