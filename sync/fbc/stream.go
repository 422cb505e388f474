package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// window is a sliding buffer over the input. Offsets are absolute stream
// offsets; bytes before keep may be dropped when the buffer refills, so
// memory stays bounded by the largest document plus one read.
type window struct {
	r    io.Reader
	buf  []byte // stream bytes [base, base+len(buf))
	base int
	keep int // absolute offset of the oldest byte still needed
	eof  bool
	err  error // read error other than io.EOF
}

const readChunk = 64 << 10

// end is the absolute offset just past the buffered data.
func (w *window) end() int { return w.base + len(w.buf) }

// bytes returns the buffered bytes [from, to) (absolute offsets).
func (w *window) bytes(from, to int) []byte { return w.buf[from-w.base : to-w.base] }

// MaxDocumentBytes caps one document (a JSON object or a YAML document):
// parsing holds a document whole, and a few times its size while it is
// decoded, so one huge line in a small gzip layer must not claim the
// memory of many catalogs. The largest documents of public catalogs are
// a few MB.
const MaxDocumentBytes = 64 << 20

// fill reads more input. It reports false when the input is exhausted, or
// when the current document would outgrow MaxDocumentBytes (w.err says so).
func (w *window) fill() bool {
	if w.eof || w.err != nil {
		return false
	}
	if w.end()-w.keep > MaxDocumentBytes {
		w.err = fmt.Errorf("%w: a document is larger than %d bytes", ErrInvalid, MaxDocumentBytes)
		return false
	}
	if drop := w.keep - w.base; drop > 0 && drop >= len(w.buf)/2 {
		n := copy(w.buf, w.buf[drop:])
		w.buf = w.buf[:n]
		w.base += drop
	}
	if cap(w.buf)-len(w.buf) < readChunk/2 {
		nb := make([]byte, len(w.buf), max(2*cap(w.buf), len(w.buf)+readChunk))
		copy(nb, w.buf)
		w.buf = nb
	}
	for tries := 0; ; tries++ {
		if tries == 100 {
			w.err = io.ErrNoProgress
			return false
		}
		// At most one byte past the cap: a reader that fills the whole
		// buffer (a file) must not bring a document over it in one read,
		// unseen by the check above.
		room := min(cap(w.buf), len(w.buf)+MaxDocumentBytes+1-(w.end()-w.keep))
		n, err := w.r.Read(w.buf[len(w.buf):room])
		w.buf = w.buf[:len(w.buf)+n]
		if err == io.EOF {
			w.eof = true
			return n > 0
		}
		if err != nil {
			w.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// splitter cuts a YAML stream into documents exactly as apimachinery's
// YAMLReader does: line by line (bufio.Reader.ReadLine, so "\r\n" becomes
// "\n" and a last line without newline gets one), a document ends at a
// line that starts with "---", and a "---" line that opens a document
// stays in it.
type splitter struct {
	w       *window
	pos     int    // absolute offset of the next line
	line    int    // 1-based number of the line at pos
	scratch []byte // document copy when lines had to be rewritten
}

var errSeparator = errors.New("invalid Yaml document separator")

// next returns the next document, valid until the following call, and the
// line it starts on; io.EOF when there is none.
func (s *splitter) next() (doc []byte, line int, err error) {
	w := s.w
	w.keep = s.pos
	start, startLine := s.pos, s.line
	docEnd := s.pos // end of the verbatim part of the document
	copied := false // the document lives in s.scratch
	s.scratch = s.scratch[:0]
	for {
		if !copied {
			if n := s.plainLines(); n > 0 {
				s.pos += n
				docEnd = s.pos
			}
		}
		nl, err := s.newline()
		if err != nil {
			return nil, 0, err
		}
		if nl < 0 && s.pos == w.end() {
			// ReadLine's final io.EOF: the document so far is the last one.
			if copied || docEnd > start {
				return s.doc(start, docEnd, copied), startLine, nil
			}
			return nil, 0, io.EOF
		}
		var raw []byte
		next := w.end()
		if nl >= 0 {
			raw, next = w.bytes(s.pos, nl), nl+1
		} else {
			raw = w.bytes(s.pos, next)
		}
		if bytes.HasPrefix(raw, []byte("---")) {
			if err := separator(raw, s.line); err != nil {
				return nil, 0, err
			}
			if copied || docEnd > start {
				s.pos, s.line = next, s.line+1
				return s.doc(start, docEnd, copied), startLine, nil
			}
		}
		// Append the line to the document.
		content := raw
		crlf := len(content) > 0 && content[len(content)-1] == '\r' && nl >= 0
		if crlf {
			content = content[:len(content)-1]
		}
		if !copied && (crlf || nl < 0) {
			copied = true
			s.scratch = append(s.scratch, w.bytes(start, docEnd)...)
		}
		if copied {
			s.scratch = append(s.scratch, content...)
			s.scratch = append(s.scratch, '\n')
		} else {
			docEnd = next
		}
		s.pos, s.line = next, s.line+1
	}
}

// plainLines counts the bytes of the buffered whole lines from s.pos that
// the loop in next would only append: no "---" at a line's start, no
// '\r'. Skipping them with a few whole-buffer searches instead of a
// line-by-line walk took the splitter from about 6% of a sync's CPU to 3%.
// It adds their count to s.line.
func (s *splitter) plainLines() int {
	region := s.w.bytes(s.pos, s.w.end())
	last := bytes.LastIndexByte(region, '\n')
	if last < 0 || len(region) < 3 || bytes.HasPrefix(region, []byte("---")) {
		return 0
	}
	region = region[:last+1]
	n := len(region)
	if i := bytes.Index(region, []byte("\n---")); i >= 0 {
		n = i + 1
	}
	if i := bytes.IndexByte(region[:n], '\r'); i >= 0 {
		n = bytes.LastIndexByte(region[:i], '\n') + 1
	}
	s.line += bytes.Count(region[:n], []byte("\n"))
	return n
}

// newline returns the offset of the newline that ends the line at s.pos,
// reading more input as needed; -1 when the input ends first.
func (s *splitter) newline() (int, error) {
	w := s.w
	from := s.pos
	for {
		if i := bytes.IndexByte(w.bytes(from, w.end()), '\n'); i >= 0 {
			return from + i, nil
		}
		from = w.end()
		if !w.fill() {
			return -1, w.err
		}
	}
}

// separator checks a line that starts with "---": only a comment may
// follow it.
func separator(raw []byte, lineNo int) error {
	rest := strings.TrimSpace(string(bytes.TrimSuffix(raw[3:], []byte("\r"))))
	if rest != "" && rest[0] != '#' {
		return fmt.Errorf("line %d: %w: %s", lineNo, errSeparator, rest)
	}
	return nil
}

// doc is the document read so far: verbatim input up to docEnd, or the
// rewritten copy.
func (s *splitter) doc(start, docEnd int, copied bool) []byte {
	if copied {
		return s.scratch
	}
	return s.w.bytes(start, docEnd)
}
