package sync

import (
	"context"
	"strings"
	stdsync "sync"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// streamer writes catalog.jsonl while layers are still being read, for the
// usual image whose files arrive in the order operator-registry walks them
// (one layer, written by a tool that walks directories). Files are emitted
// in arrival order as their parsing finishes, read back from the spool.
// Whether the guess held is only known at the end, against the unpacker's
// final file list: the caller then commits (after validation) or aborts and
// writes from the spool as if nothing had been streamed. Nothing is
// published either way until meta.json is written, so a wrong guess costs
// time, never correctness.
type streamer struct {
	w      *catalog.Writer
	cancel context.CancelFunc // fails the upload, and so a blocked Add
	sp     *spool

	mu      stdsync.Mutex
	cond    *stdsync.Cond
	queue   []*slot
	closed  bool
	ok      bool // still a candidate
	prev    string
	emitted []string // paths written, in order
	objects int
	done    chan struct{}
}

// slot is one file handed to the parser, in arrival order.
type slot struct {
	path    string
	ignored bool // by the .indexignore files read before it
	res     *fileResult
}

func newStreamer(ctx context.Context, store storage.Store, name, digest string, sp *spool) (*streamer, error) {
	wctx, cancel := context.WithCancel(ctx)
	w, err := catalog.NewWriter(wctx, store, name, digest)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &streamer{w: w, cancel: cancel, sp: sp, ok: true, done: make(chan struct{})}
	s.cond = stdsync.NewCond(&s.mu)
	go s.run()
	return s, nil
}

// enqueue registers the next file in arrival order. It runs on the
// goroutine that reads the layers, before the file is parsed.
func (s *streamer) enqueue(path string, ignored bool, res *fileResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok || s.closed {
		return
	}
	if s.prev != "" && unpack.WalkCompare(s.prev, path) >= 0 || !afterIgnoreFiles(path) {
		s.ok = false
		s.cond.Signal()
		return
	}
	s.prev = path
	s.queue = append(s.queue, &slot{path: path, ignored: ignored, res: res})
	s.cond.Signal()
}

// afterIgnoreFiles reports whether every component of path sorts after
// ".indexignore", so any ignore file that could apply to it came first.
func afterIgnoreFiles(path string) bool {
	for _, c := range strings.Split(path, "/") {
		if c <= unpack.IndexIgnore {
			return false
		}
	}
	return true
}

func (s *streamer) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed && s.ok {
			s.cond.Wait()
		}
		if !s.ok || len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		sl := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()

		<-sl.res.done
		if sl.ignored {
			continue
		}
		if err := s.write(sl); err != nil {
			s.mu.Lock()
			s.ok = false
			s.mu.Unlock()
			return
		}
	}
}

func (s *streamer) write(sl *slot) error {
	if sl.res.err != nil {
		return sl.res.err
	}
	var buf []byte
	for _, o := range sl.res.objs {
		if cap(buf) < o.n {
			buf = make([]byte, o.n)
		}
		b := buf[:o.n]
		if err := s.sp.readAt(b, o.off); err != nil {
			return err
		}
		if err := s.w.Add(o.schema, o.pkg, o.name, b); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.emitted = append(s.emitted, sl.path)
	s.objects += len(sl.res.objs)
	s.mu.Unlock()
	return nil
}

// finish waits for the writer to catch up and reports whether what it
// wrote is exactly the catalog: the final files, in order, none a link.
func (s *streamer) finish(files []unpack.File) bool {
	s.mu.Lock()
	s.closed = true
	s.cond.Signal()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok || len(s.queue) > 0 || len(files) != len(s.emitted) {
		return false
	}
	for i, f := range files {
		if f.Path != s.emitted[i] || f.Content != f.Path {
			return false
		}
	}
	return true
}

// abort stops streaming and discards what was written. The writer is
// only touched again once the emitting goroutine has stopped.
func (s *streamer) abort() {
	s.mu.Lock()
	s.ok, s.closed = false, true
	s.cond.Signal()
	s.mu.Unlock()
	s.cancel()
	<-s.done
	s.w.Abort()
}
