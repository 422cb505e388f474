package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// streamer writes catalog.jsonl while the layers are still read, in the
// order files arrive, betting that it is the final order: one layer whose
// entries come in walk order, as image builders write catalogs. Writing
// (and with it the index, the hash and the GraphQL shape) then overlaps the
// pull instead of following it. When the bet fails (files out of order, a
// later entry for a path, an .indexignore, a link, another layer's files)
// its work is dropped and the content is written from the spool after the
// pull, as before; the result is the same bytes either way.
type streamer struct {
	slots   chan *slot
	done    chan struct{}
	cw      *contentWrite
	written []*slot // in order, while the bet holds
	lost    error   // why the bet was lost; nil while it holds
}

// slot is one file handed to the parse pool, in arrival order; ready
// closes when its result is in.
type slot struct {
	path  string
	ready chan struct{}
	fr    *fileResult
}

func (sl *slot) fill(fr *fileResult) {
	if sl != nil {
		sl.fr = fr
		close(sl.ready)
	}
}

var errOutOfOrder = errors.New("files arrived out of walk order")

// newStreamer starts writing the content of name at digest, reading parsed
// files from sp and reused ones from prev (nil: none).
func (p *Pipeline) newStreamer(ctx context.Context, name, digest string, sp *spool, prev *catalog.Meta) (*streamer, error) {
	w, err := p.newWriter(ctx, name, digest, prev)
	if err != nil {
		return nil, storageError(PhasePulling, err)
	}
	cw, err := newContentWrite(w, p.store, sp, p.tmpDir, prev)
	if err != nil {
		w.Abort()
		return nil, err
	}
	s := &streamer{slots: make(chan *slot, 1024), done: make(chan struct{}), cw: cw}
	go s.run(ctx)
	return s, nil
}

// enqueue hands the streamer the next file to arrive.
func (s *streamer) enqueue(path string) *slot {
	if s == nil {
		return nil
	}
	sl := &slot{path: path, ready: make(chan struct{})}
	s.slots <- sl
	return sl
}

// run writes each file once parsed; after the bet is lost it only drains
// the queue, so the reader never blocks on it.
func (s *streamer) run(ctx context.Context) {
	defer close(s.done)
	for sl := range s.slots {
		if s.lost != nil {
			continue
		}
		select {
		case <-sl.ready:
			s.lose(s.write(ctx, sl))
		case <-ctx.Done():
			s.lose(ctx.Err())
		}
	}
}

func (s *streamer) write(ctx context.Context, sl *slot) error {
	if n := len(s.written); n > 0 && unpack.WalkCompare(s.written[n-1].path, sl.path) >= 0 {
		return errOutOfOrder
	}
	if sl.fr.err != nil {
		return sl.fr.err
	}
	at, err := s.cw.file(ctx, sl.path, sl.fr)
	if err != nil {
		return err
	}
	if at != nil && sl.fr.reused == nil {
		sl.fr.drop(at)
	}
	s.written = append(s.written, sl)
	return nil
}

func (s *streamer) lose(err error) {
	if err != nil && s.lost == nil {
		s.lost = err
		s.cw.close()
		s.cw.w.Abort()
	}
}

// stop ends the queue and waits for the streamer; abort drops its work.
func (s *streamer) stop() {
	close(s.slots)
	<-s.done
}

// end ends the written content while the bet holds, so the store writes
// it out (the fs fsync, the last S3 part) and its index and summary during
// validation instead of after it. A bet lost later (see result) drops it.
func (s *streamer) end() {
	if s.lost == nil {
		// The summary is complete too: the store writes it with the
		// index while the catalog is validated.
		if err := s.cw.setFiles(); err != nil {
			s.lose(err)
			return
		}
		s.lose(s.cw.w.EndContent())
	}
}

func (s *streamer) abort() {
	s.lose(errors.New("sync failed"))
}

// check reports why the bet was lost, or nil when it held: the files
// written are exactly files, in order, each with the result in results.
// Call it once the streamer stopped.
func (s *streamer) check(files []unpack.File, results map[string]*fileResult) error {
	if s.lost != nil {
		return s.lost
	}
	if len(s.written) != len(files) {
		return fmt.Errorf("%d files written, %d in the catalog", len(s.written), len(files))
	}
	for i, f := range files {
		if sl := s.written[i]; f.Path != sl.path || results[f.Content] != sl.fr {
			return fmt.Errorf("file %d is %s, %s was written", i, f.Path, sl.path)
		}
	}
	return nil
}

// result returns the written content when the bet held: the files
// written are exactly v's final files, each with the result v validated.
func (s *streamer) result(v validated) (*contentWrite, error) {
	if err := s.check(v.files, v.results); err != nil {
		s.lose(err)
		return nil, s.lost
	}
	s.cw.close()
	return s.cw, nil
}
