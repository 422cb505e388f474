package status

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rendered is the status a step computed, and what it was computed from.
type rendered struct {
	now     time.Time
	base    *Status // the status the server has, as far as known
	rv      string  // its resourceVersion
	endedAt time.Time
	serv    *Status           // the fields that follow from the pointer
	prog    *metav1.Condition // this replica's Progressing, nil if nothing to say
	key     string            // the kind of state prog shows
	hold    time.Duration     // how long a new sync is still held back
}

// render computes the status of one catalog from what is known now.
func (w *Writer) render(en *entry, o object) rendered {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := rendered{now: w.now(), base: en.applied, rv: en.appliedRV, endedAt: en.endedAt}
	if r.base == nil {
		r.base, r.rv = o.status, o.rv
	}
	r.serv = w.renderServingLocked(en, o, r.base, r.now)
	r.prog, r.key, r.hold = w.renderProgressLocked(en, o, r.base, r.now)
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
// has to say, the key of its state, and how long a new sync is still held
// back. It returns nil when this replica has nothing to say: no sync of
// its own, or the end of its last one is written already (a later sync,
// maybe another replica's, owns the condition since).
func (w *Writer) renderProgressLocked(en *entry, o object, base *Status, now time.Time) (*metav1.Condition, string, time.Duration) {
	gen := o.cat.Generation
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
	var hold time.Duration
	if en.outcome != nil && en.flushed.Before(en.endedAt) {
		p = en.outcome
		if en.late && o.progressOwner != "" && o.progressOwner != w.progressManager() {
			p = nil // the next holder wrote since: this end is old news
		}
	}
	if en.waiting != nil {
		p = en.waiting
	}
	if en.live != nil {
		if now.Before(en.holdUntil) {
			hold = en.holdUntil.Sub(now)
		} else {
			p = en.live
		}
	}
	if p == nil {
		return nil, "", hold
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
	return c, p.key, hold
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
