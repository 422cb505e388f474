package status

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/storage/catalog"
)

// rendered is the status a step computed, and what it was computed from.
type rendered struct {
	now     time.Time
	base    *Status           // the status the server has, as far as known
	rv      string            // its resourceVersion
	by      owner             // who owns its Progressing condition
	endedAt time.Time         // the last sync's end, marked written after the step; zero while held back
	serv    *Status           // the fields that follow from the pointer
	prog    *metav1.Condition // this replica's Progressing, nil if nothing to say
	key     string            // the kind of state prog shows
	hold    time.Duration     // how long a new sync is still held back
}

// render computes the status of one catalog from what is known now.
func (w *Writer) render(en *entry, o object) rendered {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := rendered{now: w.now(), base: en.applied, rv: en.appliedRV, by: en.appliedBy, endedAt: en.endedAt}
	if r.base == nil {
		r.base, r.rv, r.by = o.status, o.rv, o.progressOwner
	}
	r.serv = w.renderServingLocked(en, o, r.base, r.now)
	r.prog, r.key, r.hold = w.renderProgressLocked(en, o, &r)
	return r
}

// renderServingLocked computes the fields that follow from the published
// pointer: the Serving condition, resolvedSource, urls and lastUnpacked.
// Every replica computes the same, so any may write them.
func (w *Writer) renderServingLocked(en *entry, o object, base *Status, now time.Time) *Status {
	gen := o.cat.Generation
	st := &Status{}
	var serv *metav1.Condition
	switch {
	case o.cat.Unavailable():
		// As catalogd: not serving, and no URL to read it from.
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUserSpecifiedUnavailable, Message: msgUserUnavailable, ObservedGeneration: gen}
	case en.ptr.exists:
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionTrue, Reason: ReasonAvailable,
			Message: servingMessage(en.ptr.p), ObservedGeneration: gen}
		st.ResolvedSource = &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{Ref: en.ptr.p.ResolvedRef}}
		st.URLs = &URLs{Base: w.baseURL + "/catalogs/" + o.cat.Name}
		t := metav1.NewTime(en.ptr.p.PublishedAt.UTC().Truncate(time.Second))
		st.LastUnpacked = &t
	case en.ptr.known:
		serv = &metav1.Condition{Type: TypeServing, Status: metav1.ConditionFalse, Reason: ReasonUnavailable, Message: msgNotPublished, ObservedGeneration: gen}
	case base.Condition(TypeServing) != nil:
		// The pointer could not be read: keep what is there, so the
		// apply does not drop it.
		c := *base.Condition(TypeServing)
		serv = &c
		st.ResolvedSource, st.URLs, st.LastUnpacked = base.ResolvedSource, base.URLs, base.LastUnpacked
	}
	if serv != nil {
		keepTransition(serv, base, now)
		st.Conditions = append(st.Conditions, *serv)
	}
	return st
}

// renderProgressLocked computes the Progressing condition this replica
// has to say, the key of its state, and how long until it may have more
// to say (a new sync or its end held back). It returns nil when this
// replica has nothing to say: no sync of its own, or the end of its last
// one is written already or not to be written (endLocked).
func (w *Writer) renderProgressLocked(en *entry, o object, r *rendered) (*metav1.Condition, string, time.Duration) {
	gen, base, now := o.cat.Generation, r.base, r.now
	if o.cat.Unavailable() {
		// As catalogd: done with what was asked.
		c := &metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: msgUserUnavailable, ObservedGeneration: gen}
		keepTransition(c, base, now)
		return c, "unavailable", 0
	}
	if w.followOnly {
		c, key := w.followProgressLocked(en, o, base, now)
		return c, key, 0
	}
	var p *progress
	var hold soonest
	if en.outcome != nil && en.flushed.Before(en.endedAt) {
		var d time.Duration
		p, d = w.endLocked(en, r)
		hold.add(d)
	}
	if en.waiting != nil {
		p = en.waiting
	}
	if en.live != nil {
		if now.Before(en.holdUntil) {
			hold.add(en.holdUntil.Sub(now))
		} else {
			p = en.live
		}
	}
	if p == nil {
		return nil, "", time.Duration(hold)
	}
	c := &metav1.Condition{Type: TypeProgressing, Status: p.status, Reason: p.reason, Message: p.message, ObservedGeneration: p.generation}
	if p.upToDate {
		// Nothing happened: keep saying what the sync that did the work
		// said, as the status has it now.
		if prev := base.Condition(TypeProgressing); prev != nil && prev.Reason == ReasonSucceeded &&
			prev.ObservedGeneration == p.generation && strings.Contains(prev.Message, p.digest) &&
			strings.HasPrefix(prev.Message, "Published ") {
			c.Message = prev.Message
		}
	}
	keepTransition(c, base, now)
	return c, p.key, time.Duration(hold)
}

// endLocked returns the end of this replica's last sync if it is still to
// be written over the Progressing condition r.base has, else nil and how
// long until it should be looked at again.
func (w *Writer) endLocked(en *entry, r *rendered) (*progress, time.Duration) {
	if r.by.manager == "" || r.by.manager == w.progressManager() {
		return en.outcome, 0
	}
	if en.late {
		return nil, 0 // the next holder wrote since: this end is old news
	}
	if !en.outcome.upToDate {
		return en.outcome, 0
	}
	// An up-to-date sync has nothing new to say. Written over another
	// replica's running sync it would move the status back, and that
	// replica's next write would undo it; unless that report is older
	// than a lease, which a live holder renews: then the holder is gone.
	running := runningMessage(r.base.Condition(TypeProgressing))
	if left := r.by.at.Add(catalog.DefaultLeaseTTL).Sub(r.now); running && left > 0 {
		en.yielded = true
		r.endedAt = time.Time{} // not on the status, still to be written
		return nil, left
	}
	if en.yielded && !running {
		return nil, 0 // that replica reported its end since: ours is old news
	}
	return en.outcome, 0
}

// keepTransition moves a condition's transition time only when its
// status changes.
func keepTransition(c *metav1.Condition, base *Status, now time.Time) {
	if prev := base.Condition(c.Type); prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
		c.LastTransitionTime = prev.LastTransitionTime
	} else if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	}
}

// servingView is the part of a status that follows from the pointer, in
// a canonical form.
type servingView struct {
	Serving        *metav1.Condition
	ResolvedSource *ResolvedSource
	URLs           *URLs
	LastUnpacked   *metav1.Time
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sameServing reports whether a and b agree on the fields that follow
// from the pointer; other conditions and the order of the list do not
// count.
func sameServing(a, b *Status) bool {
	view := func(s *Status) servingView {
		if s == nil {
			return servingView{}
		}
		return servingView{s.Condition(TypeServing), s.ResolvedSource, s.URLs, s.LastUnpacked}
	}
	return jsonOf(view(a)) == jsonOf(view(b))
}

func sameProgressing(c *metav1.Condition, b *Status) bool {
	return jsonOf(c) == jsonOf(b.Condition(TypeProgressing))
}

// digestOf is the resolved reference a status names ("" if none).
func digestOf(s *Status) string {
	if s == nil || s.ResolvedSource == nil || s.ResolvedSource.Image == nil {
		return ""
	}
	return s.ResolvedSource.Image.Ref
}
