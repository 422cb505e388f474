package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Parse streams every object of one FBC file to fn, in file order. The file
// is read the way operator-registry reads it (apimachinery's
// YAMLOrJSONDecoder: a stream of JSON objects when the first 4096 bytes
// start with '{' after white space, YAML documents otherwise) and each
// object comes out as catalogd serves it. Memory is bounded by the largest
// object. An object without a schema is passed on as catalogd stores it
// (an empty YAML document as an Object with no Blob); the Validator
// refuses it. Parse errors wrap ErrInvalid; an error from fn is returned
// as is.
// Parse is safe for concurrent use on different readers.
func Parse(r io.Reader, fn func(Object) error, opts ...ParseOption) error {
	p := parsers.Get().(*Parser)
	err := p.Parse(r, fn, opts...)
	p.Trim()
	parsers.Put(p)
	return err
}

// Parser parses one file at a time, keeping its buffers for the next file
// up to maxKeepBytes each; Trim drops those above keepBytes. Parse and
// ParseBytes take one from a pool the GC empties every other cycle and
// trim it; a caller parsing many files (a sync) keeps its own instead,
// so buffers are not grown again after each collection, and decides
// which may keep large ones. Not safe for concurrent use.
type Parser struct{ p parser }

// NewParser returns a Parser with no buffers yet.
func NewParser() *Parser { return new(Parser) }

// Parse is Parse with x's buffers.
func (x *Parser) Parse(r io.Reader, fn func(Object) error, opts ...ParseOption) error {
	return x.with(fn, opts, func(p *parser) error { return p.run(r) })
}

// ParseBytes is ParseBytes with x's buffers.
func (x *Parser) ParseBytes(b []byte, fn func(Object) error, opts ...ParseOption) error {
	if len(b) > MaxDocumentBytes {
		// The document cap is checked as a stream is read.
		return x.Parse(bytes.NewReader(b), fn, opts...)
	}
	return x.with(fn, opts, func(p *parser) error {
		own := p.w.buf
		// A full slice: nothing the parser appends can reach the
		// caller's bytes past len(b).
		p.w = window{buf: b[:len(b):len(b)], eof: true}
		err := p.runWindow()
		p.w.buf = own[:0]
		return err
	})
}

// with runs run with x's parser set up for fn and opts, then releases
// what the parser should not keep.
func (x *Parser) with(fn func(Object) error, opts []ParseOption, run func(*parser) error) error {
	p := &x.p
	p.fn, p.borrow, p.large = fn, false, nil
	for _, o := range opts {
		o(p)
	}
	err := run(p)
	p.release(maxKeepBytes)
	return err
}

// Trim drops the buffers above keepBytes.
func (x *Parser) Trim() { x.p.release(keepBytes) }

// Large reports whether x holds a buffer above keepBytes, grown for a
// large document.
func (x *Parser) Large() bool {
	p := &x.p
	return !fits(p.w.buf, keepBytes) || !fits(p.a.strs, keepBytes) || !fits(p.out, keepBytes) ||
		!fits(p.a.tmp, keepBytes) || !fits(p.a.nodes, keepBytes) || !fits(p.a.stack, keepBytes)
}

// ParseBytes is Parse(bytes.NewReader(b), fn, opts...) without copying b
// into the parser's buffer: for a caller that holds a file whole (a sync
// reads most files so, and the copy was 12% of what it allocated). b must
// not change until ParseBytes returns.
func ParseBytes(b []byte, fn func(Object) error, opts ...ParseOption) error {
	p := parsers.Get().(*Parser)
	err := p.ParseBytes(b, fn, opts...)
	p.Trim()
	parsers.Put(p)
	return err
}

// ParseOption changes how Parse hands objects out.
type ParseOption func(*parser)

// BorrowBlobs lends each Object's Blob from the parser's own buffer: it is
// valid only until fn returns. A caller that copies the line elsewhere
// (a file, a hash) spares an allocation the size of the catalog.
func BorrowBlobs() ParseOption {
	return func(p *parser) { p.borrow = true }
}

// OneLargeAtATime makes a document above keepBytes hold mu from its
// decoding until fn returns: parsers that share mu build one such
// document at a time. Each needs buffers a few times its size (its
// strings, nodes and output: 5 MB for a 1.2 MB document), and two at
// once were the highest live heap of a sync.
func OneLargeAtATime(mu *sync.Mutex) ParseOption {
	return func(p *parser) { p.large = mu }
}

// startDocument prepares for a document of n bytes: a large one takes
// p.large and gets its strings and output sized once, rather than grown
// in many steps. It returns what ends the document.
func (p *parser) startDocument(n int) (end func()) {
	if n <= keepBytes {
		return func() {}
	}
	if cap(p.a.strs) < n {
		p.a.strs = make([]byte, 0, n)
	}
	if cap(p.out) < n+n/8 {
		p.out = make([]byte, 0, n+n/8)
	}
	if p.large == nil {
		return func() {}
	}
	p.large.Lock()
	return p.large.Unlock
}

// parsers keeps buffers warm across the files of Parse and ParseBytes.
var parsers = sync.Pool{New: func() any { return NewParser() }}

// keepBytes bounds each buffer a trimmed parser keeps between files.
// Documents of public catalogs are mostly under 50 KB; the few above it
// (32 of the 13,696 objects of a 222 MB catalog, up to 1.2 MB) grow the
// buffers again when they come. Kept at up to 4 MiB, the two parsers of
// a sync held 10 MB of its heap between such files.
const keepBytes = 256 << 10

// maxKeepBytes bounds each buffer any parser keeps: a document of tens
// of MB must not stay in memory after its file.
const maxKeepBytes = 4 << 20

// release drops references to the caller's data and buffers above limit
// bytes.
func (p *parser) release(limit int) {
	p.fn = nil
	p.w.r = nil
	p.w.buf = bounded(p.w.buf, limit)
	p.a.strs = bounded(p.a.strs, limit)
	p.out = bounded(p.out, limit)
	p.a.tmp = bounded(p.a.tmp, limit)
	p.a.reset()
	p.a.nodes = bounded(p.a.nodes, limit)
	p.a.stack = bounded(p.a.stack, limit)
	// Nodes point into the file's bytes. Clearing every kept node after
	// each file, up to 4 MiB twice per file, was 0.7% of a sync's CPU.
	clear(p.a.nodes[:min(p.a.used, cap(p.a.nodes))])
	p.a.used = 0
	clear(p.a.stack[:cap(p.a.stack)])
}

// bounded returns b, or nil when its backing array is above limit bytes.
func bounded[T any](b []T, limit int) []T {
	if !fits(b, limit) {
		return nil
	}
	return b
}

// fits reports whether b's backing array is at most limit bytes.
func fits[T any](b []T, limit int) bool {
	return uintptr(cap(b))*unsafe.Sizeof(*new(T)) <= uintptr(limit)
}

type parser struct {
	w      window
	a      arena
	fast   fastYAML
	out    []byte
	fn     func(Object) error
	docs   int // documents decoded so far
	noFast bool
	borrow bool        // BorrowBlobs
	large  *sync.Mutex // OneLargeAtATime
	// ambiguous counts objects whose reference output depends on Go map
	// order (see arena.ambiguous); only the differential tests read it.
	ambiguous int
	// line bookkeeping for JSON streams
	lineOff, lineNo int
}

// maxYAMLRetry is the largest failed JSON object retried as YAML.
const maxYAMLRetry = 4 << 20

// peekSize is how far YAMLOrJSONDecoder looks for a leading '{'.
const peekSize = 4096

func (p *parser) run(r io.Reader) error {
	p.w = window{r: r, buf: p.w.buf[:0]}
	return p.runWindow()
}

// runWindow parses what p.w holds and reads.
func (p *parser) runWindow() error {
	p.docs, p.ambiguous, p.lineOff, p.lineNo = 0, 0, 0, 0
	for len(p.w.buf) < peekSize && p.w.fill() {
	}
	if p.w.err != nil {
		return p.w.err
	}
	head := p.w.bytes(0, min(peekSize, p.w.end()))
	if bytes.HasPrefix(bytes.TrimLeftFunc(head, unicode.IsSpace), []byte("{")) {
		return p.runJSON()
	}
	return p.runYAML(0, 1, nil)
}

func (p *parser) invalid(line int, err error) error {
	if line > 0 {
		return fmt.Errorf("%w: document %d (line %d): %w", ErrInvalid, p.docs, line, err)
	}
	return fmt.Errorf("%w: document %d: %w", ErrInvalid, p.docs, err)
}

// lineAt returns the 1-based line of absolute offset off; offsets only grow.
func (p *parser) lineAt(off int) int {
	if p.lineNo == 0 {
		p.lineNo = 1
	}
	if off > p.lineOff {
		p.lineNo += bytes.Count(p.w.bytes(p.lineOff, off), []byte{'\n'})
		p.lineOff = off
	}
	return p.lineNo
}

// runJSON mirrors json.Decoder as YAMLOrJSONDecoder drives it, including
// its switch to YAML when one of the first two values fails to decode.
func (p *parser) runJSON() error {
	w := &p.w
	pos := 0 // end of the last decoded value
	for {
		w.keep = pos
		p.lineAt(pos) // count lines while the buffer still holds them
		start := p.skipJSONSpace(pos)
		if w.err != nil {
			return w.err
		}
		if start == w.end() {
			return nil
		}
		line := p.lineAt(start)
		end, derr, err := p.decodeJSON(start, line)
		if err != nil {
			return err
		}
		if derr == nil {
			pos = end
			continue
		}
		return p.retryAsYAML(pos, line, end-start, derr)
	}
}

// skipJSONSpace returns the offset of the first non-space byte from
// start, reading more input as needed; at the end of input it is w.end().
func (p *parser) skipJSONSpace(start int) int {
	w := &p.w
	for {
		for start < w.end() && isJSONSpace(w.buf[start-w.base]) {
			start++
		}
		if start < w.end() || !w.fill() {
			return start
		}
	}
}

// decodeJSON decodes and emits the value at start. On success it returns
// the value's end. Otherwise derr says why it is not JSON and end is how
// far the attempt read; err is an error that ends the run.
func (p *parser) decodeJSON(start, line int) (end int, derr, err error) {
	w := &p.w
	switch w.buf[start-w.base] {
	case '{':
		end = p.scanJSONObject(start)
		if w.err != nil {
			return end, nil, w.err
		}
		defer p.startDocument(end - start)()
		p.a.reset()
		jp := jsonParser{a: &p.a, src: w.bytes(start, end)}
		root, err := jp.value()
		if err != nil {
			return end, err, nil
		}
		schema, pkg, name, err := p.a.meta(root)
		if err != nil {
			return end, err, nil
		}
		return end, nil, p.emit(line, root, schema, pkg, name)
	case 'n':
		for w.end()-start < 4 && w.fill() {
		}
		if bytes.HasPrefix(w.bytes(start, w.end()), []byte("null")) {
			// catalogd stores it as "null"; validation refuses it.
			p.a.reset()
			return start + 4, nil, p.emit(line, node{kind: kNull}, "", "", "")
		}
		return start, errors.New("invalid JSON value"), nil
	default:
		return start, fmt.Errorf("expected a JSON object, found %q", w.buf[start-w.base]), nil
	}
}

// retryAsYAML handles a value that failed to decode as JSON (derr), size
// bytes long, after the last good value ended at pos.
func (p *parser) retryAsYAML(pos, line, size int, derr error) error {
	w := &p.w
	// A huge object that is not JSON is no YAML flow mapping either in
	// practice; decoding it again with yaml.v2 would cost many times
	// its size.
	if p.docs > 1 || size > maxYAMLRetry {
		return p.invalid(line, derr)
	}
	// Like YAMLOrJSONDecoder: rewind to the end of the last good
	// value, eat white space up to a newline and retry as YAML.
	yamlStart, ok := p.consumeWhitespace(pos)
	if w.err != nil {
		return w.err
	}
	if !ok {
		return p.invalid(line, derr)
	}
	return p.runYAML(yamlStart, p.lineAt(yamlStart), derr)
}

// scanJSONObject finds the end of the object at start by bracket matching
// (strings and escapes aware), reading more input as needed. The returned
// end is where a full parse must stop; syntax is checked by that parse.
func (p *parser) scanJSONObject(start int) int {
	w := &p.w
	depth, inStr, esc := 0, false, false
	i := start
	for {
		buf := w.buf[i-w.base:]
		for j, c := range buf {
			switch {
			case inStr:
				if esc {
					esc = false
				} else if c == '\\' {
					esc = true
				} else if c == '"' {
					inStr = false
				}
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					return i + j + 1
				}
			}
		}
		i += len(buf)
		if !w.fill() {
			return i
		}
	}
}

// consumeWhitespace copies YAMLOrJSONDecoder.consumeWhitespace: it needs four
// readable bytes at every step and stops after a newline or before the
// first non-space rune.
func (p *parser) consumeWhitespace(pos int) (int, bool) {
	w := &p.w
	for {
		for w.end()-pos < 4 && w.fill() {
		}
		if w.end()-pos < 4 {
			return 0, false
		}
		r, size := utf8.DecodeRune(w.bytes(pos, pos+4))
		if r == utf8.RuneError {
			return 0, false
		}
		if !unicode.IsSpace(r) {
			return pos, true
		}
		pos += size
		if r == '\n' {
			return pos, true
		}
	}
}

func (p *parser) runYAML(start, line int, jsonErr error) error {
	s := splitter{w: &p.w, pos: start, line: line}
	for {
		doc, line, err := s.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if p.w.err != nil {
				return err
			}
			return p.invalid(0, orJSON(jsonErr, err))
		}
		if err := p.yamlDocument(doc, line, jsonErr); err != nil {
			return err
		}
	}
}

// yamlDocument decodes and emits one YAML document starting on line.
func (p *parser) yamlDocument(doc []byte, line int, jsonErr error) error {
	defer p.startDocument(len(doc))()
	p.a.reset()
	root, err := p.decodeYAML(doc)
	if err == nil {
		switch root.kind {
		case kObj:
		case kNull:
			err = errNoSchema
		default:
			err = fmt.Errorf("cannot unmarshal %s into an object", root.kind)
		}
	}
	var schema, pkg, name string
	if err == nil {
		schema, pkg, name, err = p.a.meta(root)
	}
	if err == errNoSchema {
		// An empty document: catalogd stores nothing for it, and
		// validation refuses it.
		p.docs++
		return p.fn(Object{})
	}
	if err != nil {
		return p.invalid(line, orJSON(jsonErr, err))
	}
	return p.emit(line, root, schema, pkg, name)
}

var errNoSchema = errors.New("missing root schema field")

// orJSON reports the JSON error first when a stream that looked like JSON
// fell back to YAML, as YAMLOrJSONDecoder does.
func orJSON(jsonErr, err error) error {
	if jsonErr != nil {
		return fmt.Errorf("%w (as YAML: %v)", jsonErr, err)
	}
	return err
}

func (p *parser) decodeYAML(doc []byte) (node, error) {
	if !p.noFast {
		if root, ok := p.fast.parse(&p.a, doc); ok {
			return root, nil
		}
		p.a.reset()
	}
	return p.a.slowYAML(doc)
}

func (p *parser) emit(line int, root node, schema, pkg, name string) error {
	p.out = p.a.encode(p.out[:0], root)
	p.out = append(p.out, '\n')
	// An object without a schema is kept: catalogd stores it, and
	// the Validator refuses it as opm does.
	p.docs++
	if p.a.ambiguous {
		p.ambiguous++
	}
	blob := p.out
	if !p.borrow {
		blob = bytes.Clone(p.out)
	}
	p.a.root = root
	o := Object{Schema: schema, Package: pkg, Name: name, Blob: blob, Root: Value{&p.a, &p.a.root}}
	o.Ref = p.a.ref(root, schema)
	return p.fn(o)
}
