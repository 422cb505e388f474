package chaos

import (
	"fmt"
	"sort"
	"time"
)

// anomaly is one violation of an invariant found in a history.
type anomaly struct {
	Invariant int
	What      string
}

func (a anomaly) String() string { return fmt.Sprintf("invariant %d: %s", a.Invariant, a.What) }

// staleBound is how long after a publish a replica may still serve the
// previous digest: content.DefaultPointerTTL (1s) plus the pointer check
// in flight when the publish completed.
const staleBound = 2 * time.Second

// maxPulls is how often one digest may be pulled from the registry: once,
// and once more by a replica that took over a lapsed lease.
const maxPulls = 2

// history indexes a recorded history for the checks.
type history struct {
	ops      []op
	gen      map[string]int  // digest -> generation
	pushes   map[string][]op // catalog -> its pushes, in push order
	byLayer  map[string]op   // layer digest -> its push
	faults   []op            // every fault, from start to heal
	byKind   map[string][]op // kind -> ops, in record order
	statuses map[string][]op // catalog -> status observations
	reads    map[string][]op // catalog -> reads through the front
	finals   map[string][]op // catalog -> reads after the last heal
	pulls    map[string]int  // layer digest -> successful GETs
	writes   map[string][]op // catalog -> lease and pointer writes
}

func index(ops []op) *history {
	h := &history{ops: ops, gen: map[string]int{}, pushes: map[string][]op{}, byLayer: map[string]op{},
		byKind: map[string][]op{}, statuses: map[string][]op{}, reads: map[string][]op{}, finals: map[string][]op{},
		pulls: map[string]int{}, writes: map[string][]op{}}
	for _, o := range ops {
		h.byKind[o.Kind] = append(h.byKind[o.Kind], o)
		switch o.Kind {
		case kPush:
			if o.OK {
				h.gen[o.Digest] = o.Gen
				h.pushes[o.Catalog] = append(h.pushes[o.Catalog], o)
				if o.Layer != "" {
					h.byLayer[o.Layer] = o
				}
			}
		case kFault:
			h.faults = append(h.faults, o)
		case kStatus:
			h.statuses[o.Catalog] = append(h.statuses[o.Catalog], o)
		case kRead:
			h.reads[o.Catalog] = append(h.reads[o.Catalog], o)
		case kFinal:
			h.finals[o.Catalog] = append(h.finals[o.Catalog], o)
		case kPull:
			h.pulls[o.Layer]++
		case kLease, kPointer:
			h.writes[o.Catalog] = append(h.writes[o.Catalog], o)
		}
	}
	for _, ps := range h.pushes {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Gen < ps[j].Gen })
	}
	return h
}

// check runs every invariant over ops and returns what it found, and how
// many reads were staler than the strict reading of invariant 2 allows but
// within the documented bound (staleBound, or a replica cut from the
// store).
func check(ops []op) (found []anomaly, tolerated int) {
	h := index(ops)
	found = append(found, h.triggersLand()...)
	reads, tol := h.readsMonotonic()
	found = append(found, reads...)
	found = append(found, h.statusNeverRegresses()...)
	found = append(found, h.oneContentPerDigest()...)
	found = append(found, h.pulledAtMostTwice()...)
	found = append(found, h.contentStaysReadable()...)
	found = append(found, h.writesNeedTheLease()...)
	return found, tol
}

// genOf is the generation a digest was pushed as (0: unknown).
func (h *history) genOf(d string) int { return h.gen[d] }

// currentAt is the newest generation of catalog whose push completed
// before t.
func (h *history) currentAt(catalog string, t time.Duration) int {
	g := 0
	for _, p := range h.pushes[catalog] {
		if p.End < t {
			g = max(g, p.Gen)
		}
	}
	return g
}

// 1: every acknowledged trigger leads, after heal, to the digest current
// when it was sent, or a newer one, published and Serving.
func (h *history) triggersLand() []anomaly {
	var out []anomaly
	need := map[string]int{}
	for _, o := range h.byKind[kTrigger] {
		if o.OK {
			need[o.Catalog] = max(need[o.Catalog], h.currentAt(o.Catalog, o.Start))
		}
	}
	for cat, g := range need {
		last, ok := h.lastStatus(cat)
		switch {
		case !ok:
			out = append(out, anomaly{1, fmt.Sprintf("%s: triggered at generation %d, never had a status", cat, g)})
		case h.genOf(last.Digest) < g || last.Serving != "True":
			out = append(out, anomaly{1, fmt.Sprintf("%s: triggered at generation %d; after heal the status serves generation %d (Serving %s)",
				cat, g, h.genOf(last.Digest), last.Serving)})
		}
		for _, f := range h.finals[cat] {
			if f.OK && h.genOf(f.Digest) < g {
				out = append(out, anomaly{1, fmt.Sprintf("%s: triggered at generation %d; after heal r%d serves generation %d", cat, g, f.Replica, h.genOf(f.Digest))})
			}
		}
	}
	return out
}

func (h *history) lastStatus(cat string) (op, bool) {
	var last op
	ok := false
	for _, s := range h.statuses[cat] {
		if !ok || s.RV >= last.RV {
			last, ok = s, true
		}
	}
	return last, ok
}

// excused tells whether replica r had a fault cutting it from the store
// (or stopping it) at some time in [from, to], a fault's effect lasting
// staleBound past its heal.
func (h *history) excused(r int, from, to time.Duration) bool {
	for _, f := range h.faults {
		if f.Replica == r && f.StoreCut && f.Start <= to && f.End+staleBound >= from {
			return true
		}
	}
	return false
}

// 2: no read mixes two digests, and no reader gets an older digest after
// a newer one was served to anyone (beyond the documented staleness).
func (h *history) readsMonotonic() ([]anomaly, int) {
	var out []anomaly
	tolerated := 0
	for cat, rs := range h.reads {
		var ok []op
		for _, r := range rs {
			if !r.OK {
				continue
			}
			g := h.genOf(r.Digest)
			switch {
			case len(r.Markers) != 1:
				out = append(out, anomaly{2, fmt.Sprintf("%s: a read from r%d at %v names generations %v", cat, r.Replica, r.End, r.Markers)})
				continue
			case g == 0 || r.Markers[0] != g:
				out = append(out, anomaly{2, fmt.Sprintf("%s: r%d served generation %d under digest %s (generation %d)", cat, r.Replica, r.Markers[0], short(r.Digest), g)})
				continue
			}
			ok = append(ok, r)
		}
		sort.Slice(ok, func(i, j int) bool { return ok[i].End < ok[j].End })
		for _, r2 := range ok {
			g2 := h.genOf(r2.Digest)
			stale := false
			for _, r1 := range ok {
				if r1.End >= r2.Start {
					break
				}
				g1 := h.genOf(r1.Digest)
				if g2 >= g1 {
					continue
				}
				// Generation g1 was served to someone, then g2 < g1.
				if r1.End+staleBound >= r2.Start && r1.Replica != r2.Replica || h.excused(r2.Replica, r1.End, r2.End) {
					stale = true
					continue
				}
				out = append(out, anomaly{2, fmt.Sprintf("%s: r%d served generation %d at %v, after r%d served generation %d at %v",
					cat, r2.Replica, g2, r2.End.Round(time.Millisecond), r1.Replica, g1, r1.End.Round(time.Millisecond))})
				stale = false
				break
			}
			if stale {
				tolerated++
			}
		}
	}
	return out, tolerated
}

// 3: status never regresses: Serving, resolvedSource, lastUnpacked.
func (h *history) statusNeverRegresses() []anomaly {
	var out []anomaly
	for cat, ss := range h.statuses {
		ss = append([]op(nil), ss...)
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].RV < ss[j].RV })
		var prev op
		for i, s := range ss {
			if i > 0 {
				pg, g := h.genOf(prev.Digest), h.genOf(s.Digest)
				switch {
				case g < pg:
					out = append(out, anomaly{3, fmt.Sprintf("%s: resolvedSource went from generation %d to %d (resourceVersion %d)", cat, pg, g, s.RV)})
				case prev.Serving == "True" && s.Serving != "True":
					out = append(out, anomaly{3, fmt.Sprintf("%s: Serving went from True to %q (resourceVersion %d)", cat, s.Serving, s.RV)})
				case s.LastUnpacked.Before(prev.LastUnpacked):
					out = append(out, anomaly{3, fmt.Sprintf("%s: lastUnpacked went back from %s to %s (resourceVersion %d)", cat,
						prev.LastUnpacked.Format(time.RFC3339), s.LastUnpacked.Format(time.RFC3339), s.RV)})
				}
			}
			prev = s
		}
	}
	return out
}

// 4: no two replicas serve different content under one digest.
func (h *history) oneContentPerDigest() []anomaly {
	var out []anomaly
	seen := map[string]op{}
	for _, k := range []string{kRead, kFinal} {
		for _, r := range h.byKind[k] {
			if !r.OK || r.Digest == "" {
				continue
			}
			if first, ok := seen[r.Digest]; !ok {
				seen[r.Digest] = r
			} else if first.Sum != r.Sum {
				out = append(out, anomaly{4, fmt.Sprintf("%s: digest %s served as %s by r%d and as %s by r%d",
					r.Catalog, short(r.Digest), first.Sum, first.Replica, r.Sum, r.Replica)})
				seen[r.Digest] = r // report each new variant once
			}
		}
	}
	return out
}

// 5: each digest is pulled at most twice.
func (h *history) pulledAtMostTwice() []anomaly {
	var out []anomaly
	for layer, n := range h.pulls {
		p, ok := h.byLayer[layer]
		if ok && n > maxPulls {
			out = append(out, anomaly{5, fmt.Sprintf("%s generation %d (%s) pulled %d times", p.Catalog, p.Gen, short(p.Digest), n)})
		}
	}
	return out
}

// 6: GC never deletes content a pointer references or a reader is
// reading: after heal every replica reads the current digest whole, and
// no read fails while nothing cut its replica off.
func (h *history) contentStaysReadable() []anomaly {
	var out []anomaly
	for cat, fs := range h.finals {
		for _, f := range fs {
			if !f.OK || f.Err != "" {
				out = append(out, anomaly{6, fmt.Sprintf("%s: after heal r%d answered %d: %s", cat, f.Replica, f.Code, f.Err)})
			}
		}
	}
	for cat, rs := range h.reads {
		served := time.Duration(-1)
		for _, r := range rs {
			if r.OK && r.Err == "" {
				if served < 0 || r.End < served {
					served = r.End
				}
			}
		}
		for _, r := range rs {
			if r.OK && r.Err == "" || r.Replica < 0 || served < 0 || r.Start < served {
				continue
			}
			if r.Code == 502 || h.excused(r.Replica, r.Start-staleBound, r.End) {
				continue
			}
			out = append(out, anomaly{6, fmt.Sprintf("%s: r%d answered %d at %v with nothing cut: %s", cat, r.Replica, r.Code, r.End.Round(time.Millisecond), r.Err)})
		}
	}
	return out
}

// 7: a replica whose lease lapsed never lands a write that depends on
// it: each pointer write the store accepted was sent while the lease
// last written before it was that replica's and unexpired.
func (h *history) writesNeedTheLease() []anomaly {
	var out []anomaly
	for cat, ws := range h.writes {
		for _, p := range ws {
			if p.Kind != kPointer || !p.OK {
				continue
			}
			sent := p.Wall.Add(p.Start - p.End)
			var lease op
			found := false
			for _, l := range ws {
				if l.Kind == kLease && l.OK && l.End < p.Start && (!found || l.End > lease.End) {
					lease, found = l, true
				}
			}
			switch {
			case !found:
				out = append(out, anomaly{7, fmt.Sprintf("%s: r%d wrote the pointer (%s) with no lease written before", cat, p.Replica, short(p.Digest))})
			case lease.Replica != p.Replica:
				out = append(out, anomaly{7, fmt.Sprintf("%s: r%d wrote the pointer (%s) at %v after r%d took the lease",
					cat, p.Replica, short(p.Digest), p.Start.Round(time.Millisecond), lease.Replica)})
			case sent.After(lease.Expires):
				out = append(out, anomaly{7, fmt.Sprintf("%s: r%d wrote the pointer (%s) at %v, its lease lapsed at %s",
					cat, p.Replica, short(p.Digest), p.Start.Round(time.Millisecond), lease.Expires.Format(time.RFC3339Nano))})
			}
		}
	}
	return out
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
