package catalog

import (
	"bytes"
	"fmt"
	"io"
)

// lineChunk is what AddShapedFrom holds of a line at a time.
const lineChunk = 64 << 10

// AddShapedFrom is AddShaped for a line of n bytes read from r, for a
// caller that does not hold it: it goes to the store a chunk at a time.
// The few lines of a large catalog that are hundreds of KB each
// (a 222 MB catalog has dozens up to 1.2 MB) were read whole into a
// buffer of their own, 32 MB allocated per sync, each byte of which
// costs GC time under the sync's memory limit. A line found invalid
// part way (a "\n" before its end, none at its end, r short) fails the
// writer, since part of it went out.
func (w *Writer) AddShapedFrom(schema, pkg, name string, n int64, r io.Reader) error {
	if w.closed || w.ended {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if n <= 0 || n > maxLine {
		return fmt.Errorf("catalog: object %d (%s %s %s): %w", len(w.objs), schema, pkg, name, ErrInvalidLine)
	}
	if w.chunk == nil {
		w.chunk = make([]byte, lineChunk)
	}
	if w.sharing {
		w.appendExtent(Extent{Object: w.own, Off: w.phys, Len: n})
	}
	for left := n; left > 0; {
		b := w.chunk[:min(left, lineChunk)]
		if _, err := io.ReadFull(r, b); err != nil {
			w.err = fmt.Errorf("catalog: object %d (%s %s %s): reading its line: %w", len(w.objs), schema, pkg, name, err)
			return w.err
		}
		left -= int64(len(b))
		if nl := bytes.IndexByte(b, '\n'); left > 0 && nl >= 0 || left == 0 && nl != len(b)-1 {
			w.err = fmt.Errorf("catalog: object %d (%s %s %s): %w", len(w.objs), schema, pkg, name, ErrInvalidLine)
			return w.err
		}
		if !w.sharing {
			w.sum.Write(b)
		}
		if _, err := w.bw.Write(b); err != nil {
			w.err = fmt.Errorf("catalog: writing %s: %w", w.contentKey, err)
			return w.err
		}
	}
	w.phys += n
	w.objs = append(w.objs, object{w.intern(schema), w.intern(pkg), w.intern(name), n})
	w.size += n
	return nil
}
