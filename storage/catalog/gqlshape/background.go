package gqlshape

import "sync"

// batchSize is about how many line bytes one hand-over carries.
const batchSize = 1 << 20

// Background observes lines on its own goroutine, so discovery (a JSON
// decode of every object) overlaps the caller's work instead of adding to
// it. Lines are copied in batches of about batchSize; at most two wait, so
// it holds a few MB however large the catalog, and the caller waits when
// discovery falls behind. Not safe for concurrent use.
type Background struct {
	ch    chan *batch
	done  chan struct{}
	cur   *batch
	shape *Shape
	once  sync.Once
}

type batch struct {
	buf     []byte
	schemas []string
	ends    []int
	merge   *Shape // the shape of the lines after buf's (see Merge)
}

// NewBackground starts a discovery goroutine; end it with Shape or Stop.
func NewBackground() *Background {
	b := &Background{ch: make(chan *batch, 2), done: make(chan struct{}), cur: &batch{}, shape: New()}
	go b.run()
	return b
}

func (b *Background) run() {
	defer close(b.done)
	for bt := range b.ch {
		start := 0
		for i, end := range bt.ends {
			b.shape.Observe(bt.schemas[i], bt.buf[start:end])
			start = end
		}
		if bt.merge != nil {
			b.shape.Merge(bt.merge)
		}
	}
}

// Merge queues the shape of lines the caller did not observe, in order
// with the lines it did: the shape stored with a file a sync reused.
func (b *Background) Merge(s *Shape) {
	c := b.cur
	c.merge = s
	b.ch <- c
	b.cur = &batch{}
}

// Observe queues one line (copied) for discovery.
func (b *Background) Observe(schema string, line []byte) {
	c := b.cur
	c.buf = append(c.buf, line...)
	c.schemas = append(c.schemas, schema)
	c.ends = append(c.ends, len(c.buf))
	if len(c.buf) >= batchSize {
		b.ch <- c
		b.cur = &batch{buf: make([]byte, 0, batchSize+batchSize/4)}
	}
}

// Shape waits for every queued line and returns the shape.
func (b *Background) Shape() *Shape {
	b.finish(true)
	return b.shape
}

// Stop ends discovery, dropping what is queued; Shape or Stop again is a
// no-op.
func (b *Background) Stop() { b.finish(false) }

func (b *Background) finish(flush bool) {
	b.once.Do(func() {
		if flush && len(b.cur.ends) > 0 {
			b.ch <- b.cur
		}
		b.cur = nil
		close(b.ch)
		<-b.done
	})
}
