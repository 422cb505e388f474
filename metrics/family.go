package metrics

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// kind is a family's TYPE in the text format.
type kind string

const (
	counter   kind = "counter"
	gauge     kind = "gauge"
	histogram kind = "histogram"
	summary   kind = "summary" // only the runtime's GC pauses
)

// family is one metric family: its series by label values.
type family struct {
	name, help string
	kind       kind
	labels     []string
	buckets    []float64 // upper bounds of a histogram's buckets, ascending
	les        []string  // the buckets' le labels, +Inf last
	order      []int     // label indexes by name: the order they are written in
	names      []string  // label names in that order

	mu     sync.RWMutex
	series map[string]*series
}

// series is one set of label values. A counter's or gauge's value is
// atomic; a histogram's counts, sum and count change together under mu.
type series struct {
	values []string      // in the family's label name order
	bits   atomic.Uint64 // float64 bits

	mu      sync.Mutex
	buckets []float64 // the family's
	counts  []uint64  // per bucket, not cumulative; the last is +Inf
	sum     float64
	n       uint64
}

// registry holds the families /metrics shows, by name.
type registry struct {
	mu       sync.Mutex
	families map[string]*family
}

// family returns the family of that name, made and registered the first
// time; asking again returns the same one, so series are never split.
func (r *registry) family(k kind, name, help string, labels []string, buckets ...float64) *family {
	r.mu.Lock()
	defer r.mu.Unlock()
	name = namespace + "_" + name
	if f := r.families[name]; f != nil {
		return f
	}
	f := &family{name: name, help: help, kind: k, labels: labels, buckets: buckets, series: map[string]*series{}}
	for i := range labels {
		f.order = append(f.order, i)
	}
	slices.SortFunc(f.order, func(i, j int) int { return strings.Compare(labels[i], labels[j]) })
	for _, i := range f.order {
		f.names = append(f.names, labels[i])
	}
	for _, v := range buckets {
		f.les = append(f.les, string(appendFloat(nil, v)))
	}
	f.les = append(f.les, "+Inf")
	if len(labels) == 0 {
		f.with() // a family without labels shows its one series from the start
	}
	r.families[name] = f
	return f
}

// snapshot returns the families sorted by name.
func (r *registry) snapshot() []*family {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	return out
}

// with returns the series of these label values, one per label, made the
// first time. Bytes that are not UTF-8 become U+FFFD, so that every scrape
// parses and two values written alike are one series.
func (f *family) with(values ...string) *series {
	if len(values) != len(f.labels) {
		panic("metrics: " + f.name + " takes " + strings.Join(f.labels, ", "))
	}
	var buf [256]byte
	key := buf[:0]
	for _, v := range values {
		key = append(append(key, validUTF8(v)...), 0xff) // 0xff never occurs in UTF-8
	}
	f.mu.RLock()
	s := f.series[string(key)]
	f.mu.RUnlock()
	if s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[string(key)]; s != nil {
		return s
	}
	s = &series{values: make([]string, len(values))}
	for i, j := range f.order {
		s.values[i] = validUTF8(values[j])
	}
	if f.kind == histogram {
		s.buckets, s.counts = f.buckets, make([]uint64, len(f.buckets)+1)
	}
	f.series[string(key)] = s
	return s
}

// validUTF8 returns v, or a copy with U+FFFD for each run of invalid bytes.
func validUTF8(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, string(utf8.RuneError))
}

// sorted returns the series ordered by their label values.
func (f *family) sorted() []*series {
	f.mu.RLock()
	out := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		out = append(out, s)
	}
	f.mu.RUnlock()
	slices.SortFunc(out, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	return out
}

// add adds v to a gauge's value; counters use inc.
func (s *series) add(v float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (s *series) value() float64 { return math.Float64frombits(s.bits.Load()) }

// observe counts v in a histogram's first bucket whose bound is >= v.
func (s *series) observe(v float64) {
	i := sort.SearchFloat64s(s.buckets, v)
	s.mu.Lock()
	s.counts[i]++
	s.sum += v
	s.n++
	s.mu.Unlock()
}

// inc adds to a counter; a negative or NaN delta would make it go down.
func (s *series) inc(v float64) {
	if v > 0 {
		s.add(v)
	}
}
