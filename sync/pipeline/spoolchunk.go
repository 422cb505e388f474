package pipeline

import "sync"

// A parse worker gathers a file's lines in a chunk of its own and hands
// them to the spool a chunk at a time, instead of each object's line
// under the spool's lock: that lock, taken for every object by both
// workers, and its buffer cost 4.5% of a full sync's CPU. A file's lines
// then lie together in the spool too, so the streamer reads them back
// in few reads (spoolFile).

// chunkSize is a worker's chunk: two workers hold what the spool's own
// buffer held.
const chunkSize = 128 << 10

// chunkWriter puts one file's lines in the spool through a chunk.
type chunkWriter struct {
	sp  *spool
	buf []byte
	// pending is the first object of the file whose line is in buf:
	// its off, and that of those after it, are relative to buf.
	pending int
}

// add appends rec to fr's objects with the place of its line blob: a
// line above the chunk goes to the spool at once.
func (cw *chunkWriter) add(fr *fileResult, rec objRec, blob []byte) error {
	if len(cw.buf)+len(blob) > cap(cw.buf) {
		if err := cw.flush(fr); err != nil {
			return err
		}
	}
	if len(blob) > cap(cw.buf) {
		off, err := cw.sp.write(blob)
		if err != nil {
			return err
		}
		rec.off = off
		fr.objs = append(fr.objs, rec)
		cw.pending = len(fr.objs)
		return nil
	}
	rec.off = int64(len(cw.buf))
	cw.buf = append(cw.buf, blob...)
	fr.objs = append(fr.objs, rec)
	return nil
}

// flush writes the chunk and makes the offsets of its objects final.
func (cw *chunkWriter) flush(fr *fileResult) error {
	if len(cw.buf) > 0 {
		base, err := cw.sp.write(cw.buf)
		if err != nil {
			return err
		}
		for i := cw.pending; i < len(fr.objs); i++ {
			fr.objs[i].off += base
		}
		cw.buf = cw.buf[:0]
	}
	cw.pending = len(fr.objs)
	return nil
}

// chunks are the pool's chunk buffers between files.
type chunks struct {
	mu   sync.Mutex
	free [][]byte
}

func (c *chunks) get() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, chunkSize)
}

func (c *chunks) put(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.free = append(c.free, b)
}

// write puts b in the spool in one piece and returns its offset. Writers
// take their place under the lock and write outside it, side by side; a
// spool written so has nothing in its buffer (append's).
func (s *spool) write(b []byte) (int64, error) {
	s.mu.Lock()
	off := s.size
	s.size += int64(len(b))
	s.flushed = s.size
	s.mu.Unlock()
	_, err := s.f.WriteAt(b, off)
	return off, err
}
