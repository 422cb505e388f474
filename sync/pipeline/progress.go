package pipeline

import (
	"sync"
	"time"
)

// Phase is a step of a sync, in catalogd's spirit: a status writer turns
// phases into Progressing messages.
type Phase string

// The phases of a sync, in order; Failed ends a failed one.
const (
	PhaseResolving  Phase = "Resolving"
	PhasePulling    Phase = "Pulling"
	PhaseUnpacking  Phase = "Unpacking"
	PhaseValidating Phase = "Validating"
	PhaseIndexing   Phase = "Indexing"
	PhasePublishing Phase = "Publishing"
	PhasePublished  Phase = "Published"
	PhaseFailed     Phase = "Failed"
)

// Event reports progress of one sync. Pulling events repeat as bytes move;
// every other phase is reported once.
type Event struct {
	Catalog string
	Phase   Phase
	Time    time.Time
	// Digest is the resolved digest, once known.
	Digest string

	// Layer (1-based) of Layers is the layer being pulled; LayerDigest its
	// digest; BytesDone/BytesTotal the compressed bytes of that layer.
	Layer, Layers int
	LayerDigest   string
	BytesDone     int64
	BytesTotal    int64

	// Bundles, Packages and Objects are known from Validating on.
	Bundles, Packages, Objects int

	// Result is set on Published; Err on Failed.
	Result *Result
	Err    *Error
}

// Terminal reports whether e ends the sync.
func (e Event) Terminal() bool { return e.Phase == PhasePublished || e.Phase == PhaseFailed }

// Observer receives events. Observe runs on a goroutine of its own per
// observer and may be slow: the pipeline never waits for it. Consecutive
// byte counts of one layer are merged while an observer is busy; phase
// changes are never dropped.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// mailbox delivers events to one observer without blocking the sender.
type mailbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []Event
	closed bool
	done   chan struct{}
}

func newMailbox(o Observer) *mailbox {
	m := &mailbox{done: make(chan struct{})}
	m.cond = sync.NewCond(&m.mu)
	go m.run(o)
	return m
}

func (m *mailbox) send(e Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	// A byte count superseded by a newer one for the same layer is noise.
	if n := len(m.queue); n > 0 && e.Phase == PhasePulling && m.queue[n-1].Phase == PhasePulling && m.queue[n-1].Layer == e.Layer {
		m.queue[n-1] = e
	} else {
		m.queue = append(m.queue, e)
	}
	m.cond.Signal()
}

func (m *mailbox) close() {
	m.mu.Lock()
	m.closed = true
	m.cond.Signal()
	m.mu.Unlock()
}

func (m *mailbox) run(o Observer) {
	defer close(m.done)
	for {
		m.mu.Lock()
		for len(m.queue) == 0 && !m.closed {
			m.cond.Wait()
		}
		if len(m.queue) == 0 && m.closed {
			m.mu.Unlock()
			return
		}
		e := m.queue[0]
		m.queue = m.queue[1:]
		m.mu.Unlock()
		o.Observe(e)
	}
}

// reporter fans events out to every observer's mailbox.
type reporter struct {
	catalog string
	digest  string
	boxes   []*mailbox
	now     func() time.Time
}

func newReporter(catalog string, now func() time.Time, obs []Observer) *reporter {
	r := &reporter{catalog: catalog, now: now}
	for _, o := range obs {
		if o != nil {
			r.boxes = append(r.boxes, newMailbox(o))
		}
	}
	return r
}

func (r *reporter) emit(e Event) {
	e.Catalog = r.catalog
	e.Time = r.now()
	if e.Digest == "" {
		e.Digest = r.digest
	}
	for _, b := range r.boxes {
		b.send(e)
	}
}

// close lets every mailbox drain and stop; it does not wait for them.
func (r *reporter) close() {
	for _, b := range r.boxes {
		b.close()
	}
}
