package status

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// WithFollowOnly makes a Writer for a cluster whose catalogs another
// deployment syncs into the store this one reads (a fleet's member
// cluster). It runs no syncs, so its Progressing condition follows from
// the published pointer: Succeeded when the pointer holds the spec's
// image, Retrying while the store has nothing or another image under the
// catalog's name. Serving is rendered as for any Writer: the store's
// content is what readers get.
func WithFollowOnly() WriterOption { return func(w *Writer) { w.followOnly = true } }

// Refresh says that the published pointer of the named catalog may have
// changed (a bucket notification, a poll that saw a new ETag): a worker
// reads it again and applies what follows. Refreshes of a catalog
// already queued are coalesced into one read; names the cluster does not
// have are dropped by the worker.
func (w *Writer) Refresh(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if en := w.entries[name]; en != nil {
		en.ptrStale = true
	}
	w.queue.Add(name)
}

// followProgressLocked is the Progressing condition of a follow-only
// Writer, and the key of its state; nil while the pointer is unknown (a
// failed read keeps what the status has).
func (w *Writer) followProgressLocked(en *entry, o object, base *Status, now time.Time) (*metav1.Condition, string) {
	if !en.ptr.known {
		return nil, ""
	}
	want := o.cat.Image.String()
	c := &metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue, ObservedGeneration: o.cat.Generation}
	var key string
	switch {
	case !en.ptr.exists:
		c.Reason, key = ReasonRetrying, "follow/unpublished"
		c.Message = fmt.Sprintf("Waiting for %s to be published to the store", want)
	case en.ptr.p.Ref != want:
		c.Reason, key = ReasonRetrying, "follow/other"
		c.Message = fmt.Sprintf("Waiting for %s to be published to the store, which has %s", want, Sanitize(truncate.Text(en.ptr.p.Ref, maxMirror)))
	default:
		c.Reason, key = ReasonSucceeded, "follow/published"
		c.Message = fmt.Sprintf("Published %s (read from the store)", en.ptr.p.Digest)
	}
	c.Message = truncate.Text(c.Message, truncate.Status)
	keepTransition(c, base, now)
	return c, key
}

// Has reports whether the cluster has the named ClusterCatalog, from the
// informer's cache without parsing it: a notification's check.
func (s *ClusterCatalogs) Has(name string) bool {
	_, ok, err := s.inf.GetStore().GetByKey(name)
	return ok && err == nil
}
