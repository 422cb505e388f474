package fbc

// Tests written for the mutants of the streaming parser (parse.go,
// stream.go, yamlslow.go) that gremlins found alive or not covered
// (docs/testing.md).

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// mut5ScriptReader returns its chunks one Read at a time, the last one
// together with io.EOF (as some readers do), and then err (io.EOF if nil);
// with errWithData, err comes with the last chunk.
type mut5ScriptReader struct {
	chunks      []string
	err         error
	errWithData bool
}

func (c *mut5ScriptReader) Read(b []byte) (int, error) {
	if len(c.chunks) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(b, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] != "" {
		return n, nil
	}
	c.chunks = c.chunks[1:]
	if len(c.chunks) == 0 && c.err == nil {
		return n, io.EOF
	}
	if len(c.chunks) == 0 && c.errWithData {
		return n, c.err
	}
	return n, nil
}

// mut5Blobs parses in and returns the objects' blobs, one after another.
func mut5Blobs(t *testing.T, r io.Reader) (string, int, error) {
	t.Helper()
	var b strings.Builder
	n := 0
	err := Parse(r, func(o Object) error {
		b.Write(o.Blob)
		n++
		return nil
	})
	return b.String(), n, err
}

// Brackets and quotes inside JSON strings do not end an object; nested
// objects and arrays do not end it early.
func TestParseJSONBracketsInStrings(t *testing.T) {
	in := `{"schema":"a","s":"}]{[\"\\","v":[{"x":[1,[]]},{}],"o":{"p":{}}}` + ` {"schema":"b","t":"\""}`
	want := `{"o":{"p":{}},"s":"}]{[\"\\","schema":"a","v":[{"x":[1,[]]},{}]}` + "\n" + `{"schema":"b","t":"\""}` + "\n"
	got, n, err := mut5Blobs(t, strings.NewReader(in))
	if err != nil || n != 2 || got != want {
		t.Fatalf("%d objects, %v:\n got %q\nwant %q", n, err, got, want)
	}
}

// The parser drops buffers larger than 4 MiB when it goes back to the
// pool, and keeps smaller ones warm. (Memory only: no output shows it.)
func TestParserReleaseKeepsBuffersUpTo4MiB(t *testing.T) {
	const keep = 4 << 20
	backing := make([]byte, keep+1)
	for _, size := range []int{keep, keep + 1} {
		p := new(parser)
		p.w.buf = backing[:0:size]
		p.a.strs = backing[:0:size]
		p.out = backing[:0:size]
		p.a.tmp = backing[:0:size]
		p.release()
		for name, b := range map[string][]byte{"window": p.w.buf, "strings": p.a.strs, "output": p.out, "scratch": p.a.tmp} {
			if kept := b != nil; kept != (size == keep) {
				t.Errorf("cap %d: %s buffer kept %v", size, name, kept)
			}
		}
	}
}

// The first read that fills the 4096 bytes looked at for a leading '{'
// ends the look-ahead: objects before a later read error still come out.
func TestParseLookAheadStopsAt4096Bytes(t *testing.T) {
	head := "schema: a\n---\nschema: b\npad: "
	head += strings.Repeat("x", peekSize-len(head))
	boom := errors.New("boom")
	_, n, err := mut5Blobs(t, &mut5ScriptReader{chunks: []string{head}, err: boom})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("%d objects, %v; want 1 and %v", n, err, boom)
	}
}

// A reader that keeps returning nothing ends the parse with
// io.ErrNoProgress after 100 tries, even if it would give data later.
func TestParseReaderWithoutProgress(t *testing.T) {
	r := &mut5StallReader{stalls: 150, data: "schema: a\n"}
	_, n, err := mut5Blobs(t, r)
	if !errors.Is(err, io.ErrNoProgress) || n != 0 {
		t.Fatalf("%d objects, %v; want %v", n, err, io.ErrNoProgress)
	}
}

// mut5StallReader returns (0, nil) stalls times, then data, then io.EOF.
type mut5StallReader struct {
	stalls int
	data   string
}

func (s *mut5StallReader) Read(b []byte) (int, error) {
	if s.stalls > 0 {
		s.stalls--
		return 0, nil
	}
	if s.data == "" {
		return 0, io.EOF
	}
	n := copy(b, s.data)
	s.data = s.data[n:]
	return n, nil
}

// Data that comes with io.EOF is read: here the end of a JSON object that
// started past the look-ahead.
func TestParseDataWithEOF(t *testing.T) {
	long := strings.Repeat("x", peekSize)
	r := &mut5ScriptReader{chunks: []string{`{"schema":"a"}{"schema":"b"}{"schema":"c","pad":"` + long, `"}`}}
	got, n, err := mut5Blobs(t, r)
	if err != nil || n != 3 || !strings.HasSuffix(got, `{"pad":"`+long+`","schema":"c"}`+"\n") {
		t.Fatalf("%d objects, %v", n, err)
	}
}

// A document may be exactly MaxDocumentBytes long; one byte more is
// refused. The window is set up as if that much had been kept, without
// holding 64 MiB.
func TestWindowDocumentLimit(t *testing.T) {
	for _, held := range []int{MaxDocumentBytes, MaxDocumentBytes + 1} {
		w := window{r: strings.NewReader("x"), base: held}
		ok := w.fill()
		if wantOK := held == MaxDocumentBytes; ok != wantOK || (w.err == nil) != wantOK {
			t.Errorf("%d bytes held: fill %v, %v", held, ok, w.err)
		}
	}
}

// The window's buffer grows only when less than half a read chunk of it
// is free, and then at least doubles. (Memory only: no output shows it.)
func TestWindowGrowth(t *testing.T) {
	for _, tc := range []struct{ free, wantCap int }{{readChunk / 2, readChunk}, {readChunk/2 - 1, 2 * readChunk}} {
		w := window{r: strings.NewReader("x"), buf: make([]byte, readChunk-tc.free, readChunk)}
		if !w.fill() || cap(w.buf) != tc.wantCap {
			t.Errorf("%d bytes free: cap %d after fill, want %d (%v)", tc.free, cap(w.buf), tc.wantCap, w.err)
		}
	}
	w := window{r: strings.NewReader("schema: a\n")}
	if !w.fill() || string(w.buf) != "schema: a\n" || cap(w.buf) != readChunk {
		t.Fatalf("first fill: %q (cap %d), %v", w.buf, cap(w.buf), w.err)
	}
}

// Only the failed value's own size counts against the YAML retry limit,
// not where it starts: a small flow mapping after a first object of 4 MiB
// (white space, mostly) is still retried as YAML.
func TestParseYAMLRetryFarIntoTheStream(t *testing.T) {
	in := `{"schema":"a"` + strings.Repeat(" ", maxYAMLRetry) + "}\n{schema: b}\n"
	var names []string
	err := Parse(strings.NewReader(in), func(o Object) error {
		names = append(names, o.Schema)
		return nil
	})
	if err != nil || strings.Join(names, ",") != "a,b" {
		t.Fatalf("objects %q, %v", names, err)
	}
}

// fromYAML takes values of types that yaml.v2 never produces for an any
// target (so Parse cannot reach this fallback) through the JSON round
// trip, under the same depth limit as everything else.
func TestFromYAMLOtherTypes(t *testing.T) {
	var a arena
	conv := func(v any, depth int) (string, error) {
		a.reset()
		n, err := a.fromYAML(v, depth)
		if err != nil {
			return "", err
		}
		return string(a.encode(nil, n)), nil
	}
	v := map[string]any{"b": []string{"x"}, "a": json.Number("1.5"), "c": map[string]any{"d": nil}}
	if got, err := conv(v, 0); err != nil || got != `{"a":1.5,"b":["x"],"c":{"d":null}}` {
		t.Errorf("round trip: %s, %v", got, err)
	}
	if got, err := conv(map[string]any{}, maxDepth-1); err != nil || got != "{}" {
		t.Errorf("object at the depth limit: %s, %v", got, err)
	}
	for _, v := range []any{map[string]any{}, map[string]any{"a": map[string]any{}}} {
		depth := maxDepth - len(v.(map[string]any))
		if got, err := conv(v, depth); !errors.Is(err, errDepth) {
			t.Errorf("%v at depth %d: %s, %v; want %v", v, depth, got, err, errDepth)
		}
	}
	if _, err := conv(make(chan int), 0); err == nil {
		t.Error("a channel converted")
	}
}

// yaml.v2's sequences and mappings are held to encoding/json's nesting
// limit: a container at level 10000 (the root being level 1) is fine, one
// at level 10001 is refused, and a container's children are one level
// deeper. (Called at a given depth directly: a document 10000 levels deep
// costs yaml.v2 tens of milliseconds.)
func TestFromYAMLDepthLimit(t *testing.T) {
	var a arena
	for _, empty := range []any{[]any{}, map[any]any{}} {
		for _, c := range []struct {
			v     any
			depth int
			ok    bool
		}{
			{empty, maxDepth - 1, true},
			{empty, maxDepth, false},
			{[]any{empty}, maxDepth - 2, true},
			{[]any{empty}, maxDepth - 1, false},
			{map[any]any{"a": empty}, maxDepth - 2, true},
			{map[any]any{"a": empty}, maxDepth - 1, false},
		} {
			a.reset()
			_, err := a.fromYAML(c.v, c.depth)
			if c.ok != (err == nil) || !c.ok && !errors.Is(err, errDepth) {
				t.Errorf("%#v at depth %d: %v", c.v, c.depth, err)
			}
		}
	}
}

// Distinct YAML keys with one JSON name (the string "1" and the integer 1)
// leave one entry, the same on every run whatever Go's map order: the
// blob, which is hashed and compared, must not change between syncs.
func TestParseDuplicateJSONNamesDeterministic(t *testing.T) {
	in := "schema: a\nv: {\"1\": s, b: x, c: x, d: x, e: x, f: x, g: x, 1: i}\n"
	want := `{"schema":"a","v":{"1":"i","b":"x","c":"x","d":"x","e":"x","f":"x","g":"x"}}` + "\n"
	for range 50 {
		got, _, err := mut5Blobs(t, strings.NewReader(in))
		if err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
}

// A mapping is marked ambiguous (its reference output depends on Go's map
// order, so the differential tests skip it) only when two keys share a
// JSON name.
func TestYAMLEntriesAmbiguous(t *testing.T) {
	for _, c := range []struct {
		m    map[any]any
		want bool
	}{
		{map[any]any{"a": 1, "b": 2, 3: 3}, false},
		{map[any]any{"a": 1, "1": 2, 1: 3}, true},
		{map[any]any{true: 1, "true": 2}, true},
		{map[any]any{"1": 1, 5: 2, 1.0: 3}, true}, // "1" and 1.0 apart but for sorting by name
	} {
		for range 50 { // whatever order the map hands out
			var a arena
			a.reset()
			if _, err := a.yamlEntries(c.m); err != nil || a.ambiguous != c.want {
				t.Fatalf("%v: ambiguous %v, %v; want %v", c.m, a.ambiguous, err, c.want)
			}
		}
	}
}

// mut5Objects parses in (read in the given chunks) and returns the objects'
// blobs, an empty object as "<empty>".
func mut5Objects(t *testing.T, chunks ...string) ([]string, error) {
	t.Helper()
	var got []string
	err := Parse(&mut5ScriptReader{chunks: chunks}, func(o Object) error {
		if o.Blob == nil {
			got = append(got, "<empty>")
		} else {
			got = append(got, strings.TrimSuffix(string(o.Blob), "\n"))
		}
		return nil
	})
	return got, err
}

// mut5Pad fills a first read past the 4096 bytes looked at for a leading '{',
// so that what follows comes in later reads.
var mut5Pad = strings.Repeat(" ", peekSize)

// JSON values and the white space between them may be cut anywhere by
// reads.
func TestParseJSONAcrossReads(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"object after a read boundary", []string{`{"schema":"a"}` + mut5Pad, `{"schema":"b"}`}, `{"schema":"a"}|{"schema":"b"}`},
		{"null cut by a read", []string{`{"schema":"a"}{"schema":"b"}` + mut5Pad + "nu", "ll"}, `{"schema":"a"}|{"schema":"b"}|null`},
		{"white space before YAML cut by a read", []string{`{"schema":"a"}` + mut5Pad + "  s", "chema: b\n"}, `{"schema":"a"}|{"schema":"b"}`},
		{"YAML cut by a read right after JSON", []string{`{"schema":"a","pad":"` + mut5Pad + `"}s`, "chema: b\n"}, `{"pad":"` + mut5Pad + `","schema":"a"}|{"schema":"b"}`},
	} {
		got, err := mut5Objects(t, c.chunks...)
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%s: %q, %v; want %s", c.name, got, err, c.want)
		}
	}
}

// A JSON null is handed out as soon as it is read: the parser does not
// read the rest of the stream first.
func TestParseJSONNullStreams(t *testing.T) {
	r := &mut5ScriptReader{chunks: []string{`{"schema":"a"}` + "\nnull\n" + mut5Pad, `{"schema":"b"}`, `{"schema":"c"}`}}
	unread := -1
	err := Parse(r, func(o Object) error {
		if string(o.Blob) == "null\n" {
			unread = len(r.chunks)
		}
		return nil
	})
	if err != nil || unread != 2 {
		t.Fatalf("%d reads left when null came out, %v; want 2", unread, err)
	}
}

// An error about a value that is no JSON object names that value, also
// after the window has dropped earlier input.
func TestParseJSONBadValueAfterManyObjects(t *testing.T) {
	objs := strings.Repeat(`{"schema":"a"}`, peekSize/14+1)
	_, err := mut5Objects(t, objs, "7")
	if err == nil || !strings.Contains(err.Error(), "expected a JSON object, found '7'") {
		t.Fatalf("%v", err)
	}
}

// The YAML retry after a JSON stream follows YAMLOrJSONDecoder: it needs
// four bytes at every step of the white space it skips, and skips it only
// up to and including the first newline.
func TestParseYAMLRetryWhiteSpace(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{`{"schema":"a"}x: 1`, `{"schema":"a"}|{"x":1}`, ""},
		{`{"schema":"a"}  x`, "", "expected a JSON object, found 'x'"},
		{`{"schema":"a"}` + "\n  schema: b\n  name: c\n", `{"schema":"a"}|{"name":"c","schema":"b"}`, ""},
	} {
		got, err := mut5Objects(t, c.in)
		if c.err == "" && (err != nil || strings.Join(got, "|") != c.want) ||
			c.err != "" && (err == nil || strings.Contains(err.Error(), "as YAML") || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %q, %v", c.in, got, err)
		}
	}
}

// An empty YAML document is handed out, and the parse goes on after it,
// unless the callback fails.
func TestParseEmptyDocumentFirst(t *testing.T) {
	in := "# nothing\n---\nschema: a\n"
	got, err := mut5Objects(t, in)
	if err != nil || strings.Join(got, "|") != `<empty>|{"schema":"a"}` {
		t.Fatalf("%q, %v", got, err)
	}
	stop := errors.New("stop")
	if err := Parse(strings.NewReader(in), func(Object) error { return stop }); err != stop {
		t.Fatalf("callback error: %v", err)
	}
}

// Parse stops at the first io.EOF, even from a reader that would return
// more afterwards.
func TestParseStopsAtEOF(t *testing.T) {
	r := &mut5EOFThenMore{}
	got, err := mut5Count(r)
	if err != nil || got != 1 {
		t.Fatalf("%d objects, %v; want 1", got, err)
	}
}

type mut5EOFThenMore struct{ reads int }

func (e *mut5EOFThenMore) Read(b []byte) (int, error) {
	e.reads++
	switch e.reads {
	case 1:
		return copy(b, "schema: a\n"), io.EOF
	case 2:
		return copy(b, "---\nschema: b\n"), nil
	}
	return 0, io.EOF
}

func mut5Count(r io.Reader) (int, error) {
	n := 0
	err := Parse(r, func(Object) error { n++; return nil })
	return n, err
}

// The window drops the input before keep once that is at least half of
// what it holds, and keeps its buffer then. (Memory only.)
func TestWindowCompaction(t *testing.T) {
	data := make([]byte, readChunk)
	for i := range data {
		data[i] = byte(i % 251)
	}
	for _, keep := range []int{0, readChunk/2 - 1, readChunk / 2, readChunk - 1} {
		w := window{r: strings.NewReader("x"), buf: append(make([]byte, 0, readChunk), data...), keep: keep}
		if !w.fill() {
			t.Fatalf("keep %d: fill: %v", keep, w.err)
		}
		wantBase := 0
		if keep >= readChunk/2 {
			wantBase = keep
		}
		if w.base != wantBase || string(w.bytes(keep, readChunk)) != string(data[keep:]) || string(w.bytes(readChunk, w.end())) != "x" {
			t.Errorf("keep %d: base %d, want %d; window holds %d bytes", keep, w.base, wantBase, len(w.buf))
		}
		if wantBase > 0 && cap(w.buf) != readChunk {
			t.Errorf("keep %d: cap %d after dropping half, want %d", keep, cap(w.buf), readChunk)
		}
	}
}

// YAML lines are split as bufio.ReadLine splits them: a first line may be
// empty, and only the "\r" of a "\r\n" goes.
func TestParseYAMLLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\nschema: a\n---\nschema: b\n", `{"schema":"a"}|{"schema":"b"}`},
		{"schema: a\r\nv: |\r\n  x\r\n  y\r\n", `{"schema":"a","v":"x\ny\n"}`},
		{"schema: a\nv: |\n  x\r\r\n  y\n", `{"schema":"a","v":"x\ny\n"}`},
	} {
		got, err := mut5Objects(t, c.in)
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%q: %q, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// A value of exactly maxYAMLRetry bytes that is not JSON is still retried
// as YAML (TestNoYAMLRetryOfHugeObjects covers larger ones).
func TestParseYAMLRetryAtSizeLimit(t *testing.T) {
	in := strings.Repeat("{", maxYAMLRetry) // yaml.v2 gives up after 10000
	err := Parse(strings.NewReader(in), func(Object) error { return nil })
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "as YAML") {
		t.Fatalf("%.200v", err)
	}
}

// Data that comes with a read error is parsed before the error is
// reported.
func TestParseDataWithReadError(t *testing.T) {
	boom := errors.New("boom")
	first := "schema: a\npad: " + strings.Repeat("x", peekSize) + "\n---\n"
	_, n, err := mut5Blobs(t, &mut5ScriptReader{chunks: []string{first, "schema: b\n---\nschema: c\n"}, err: boom, errWithData: true})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("%d objects, %v; want 2 and %v", n, err, boom)
	}
}

// The splitter hands out a document straight from the window unless a
// line had to be rewritten ("\r\n", or a last line without newline).
// (Memory only: the content is the same either way.)
func TestSplitterCopiesOnlyWhenNeeded(t *testing.T) {
	for _, c := range []struct {
		in, doc string
		copied  bool
	}{
		{"a: 1\n---\n", "a: 1\n", false},
		{"\na: 1\n---\n", "\na: 1\n", false},
		{"a: 1\r\n---\n", "a: 1\n", true},
		{"a: 1", "a: 1\n", true},
	} {
		w := window{r: strings.NewReader(c.in)}
		s := splitter{w: &w, line: 1}
		doc, _, err := s.next()
		if err != nil || string(doc) != c.doc || (len(s.scratch) > 0) != c.copied {
			t.Errorf("%q: %q (copied %v), %v; want %q (copied %v)", c.in, doc, len(s.scratch) > 0, err, c.doc, c.copied)
		}
	}
}
