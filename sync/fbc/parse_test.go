package fbc

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"malformed yaml", "schema: a\n---\nschema: b\n  bad: [\n", []string{"document 1 (line 3)", "yaml"}},
		{"after an empty document", "# nothing\n---\nschema: a\n---\nschema: b\n  bad: [\n", []string{"document 2 (line 5)"}},
		{"bad separator", "schema: a\n--- x\n", []string{"document 0: line 2: invalid Yaml document separator: x"}},
		{"malformed json", `{"schema":"a"}{"schema":"b"}{"schema":}`, []string{"document 2 (line 1)", "invalid character"}},
		{"malformed json on line 4", "{\"schema\":\"a\"}\n{\"schema\":\"b\"}\n\n{\"schema\":}", []string{"document 2 (line 4)"}},
		{"truncated json", `{"schema":"a"}{"schema":"b"}{"schema":"c"`, []string{"document 2", "unexpected end of JSON input"}},
		{"duplicate folded keys", "schema: a\nName: x\nnAme: y\n", []string{`duplicate keys for key "name"`}},
		{"schema not a string", "schema: [a]\n", []string{`expected value for key "schema" to be a string`}},
		{"nan", "schema: a\nv: .nan\n", []string{"unsupported value: NaN"}},
		{"huge line", "schema: a\nv: [" + strings.Repeat("x", 1<<20), []string{"document 0 (line 1)"}},
		{"deep json", `{"schema":"a","v":` + strings.Repeat("[", 20000), []string{"exceeded max depth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := Parse(strings.NewReader(tt.in), func(Object) error { n++; return nil })
			if err == nil {
				t.Fatalf("no error after %d objects", n)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseSchemaless: objects without a schema are passed on as catalogd
// stores them (an empty YAML document as nothing, a JSON null as "null");
// the Validator refuses them as opm does.
func TestParseSchemaless(t *testing.T) {
	for _, tt := range []struct{ name, in, blobs, msg string }{
		{"schemaless", "name: x\n", `{"name":"x"}` + "\n", `object '{"name":"x"}' is missing root schema field`},
		{"schemaless json", `{"schema":"a"}` + "\n" + `{"name":"x"}`, `{"schema":"a"}` + "\n" + `{"name":"x"}` + "\n", `object '{"name":"x"}'`},
		{"empty document", "schema: a\n---\n# nothing\n", `{"schema":"a"}` + "\n", "object '' is missing root schema field"},
		{"json null", `{"schema":"a"}` + "\nnull\n", `{"schema":"a"}` + "\nnull\n", "object 'null' is missing root schema field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var blobs strings.Builder
			v := NewValidator()
			if err := Parse(strings.NewReader(tt.in), func(o Object) error {
				blobs.Write(o.Blob)
				v.Add("c.yaml", o)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if blobs.String() != tt.blobs {
				t.Errorf("blobs %q, want %q", blobs.String(), tt.blobs)
			}
			err := v.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Rule != RuleSchemaMissing || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("validate: %v, want %s %q", err, RuleSchemaMissing, tt.msg)
			}
		})
	}
}

func TestParseCallbackAndReadErrors(t *testing.T) {
	stop := errors.New("stop")
	err := Parse(strings.NewReader("schema: a\n---\nschema: b\n"), func(Object) error { return stop })
	if err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	boom := errors.New("disk on fire")
	err = Parse(io.MultiReader(strings.NewReader("schema: a\n"), errReader{boom}), func(Object) error { return nil })
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalid) {
		t.Fatalf("read error: got %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestParseObjectFields(t *testing.T) {
	var got []Object
	in := "Schema: olm.bundle\nPACKAGE: p\nname: b\nimage: i\nproperties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]\n---\nschema: x.custom\nv: <&>\n"
	if err := Parse(strings.NewReader(in), func(o Object) error { got = append(got, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d objects", len(got))
	}
	b := got[0]
	if b.Schema != "olm.bundle" || b.Package != "p" || b.Name != "b" || b.Ref == nil || b.Ref.Image != "i" ||
		len(b.Ref.Packages) != 1 || b.Ref.Packages[0] != (PackageProperty{PackageName: "p", Version: "1.0.0"}) {
		t.Fatalf("bundle %+v ref %+v", b, b.Ref)
	}
	if want := `{"PACKAGE":"p","Schema":"olm.bundle","image":"i","name":"b","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}` + "\n"; string(b.Blob) != want {
		t.Fatalf("blob %s", b.Blob)
	}
	if got[1].Ref != nil || string(got[1].Blob) != `{"schema":"x.custom","v":"<&>"}`+"\n" {
		t.Fatalf("custom %+v", got[1])
	}
}

// TestParseConcurrent parses the same files from several goroutines (run
// with -race) and expects identical output.
func TestParseConcurrent(t *testing.T) {
	files := catalogFiles(t, "../../testdata/fbc/community-v4.21-3pkgs/configs")
	want := map[string]string{}
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = runFastString(t, data)
	}
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, f := range files {
				data, _ := readFile(f)
				if got := runFastString(t, data); got != want[f] {
					t.Errorf("%s: concurrent parse differs", f)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func runFastString(t *testing.T, data []byte) string {
	var b strings.Builder
	if err := Parse(strings.NewReader(string(data)), func(o Object) error {
		b.Write(o.Blob)
		return nil
	}); err != nil {
		t.Error(err)
	}
	return b.String()
}

// scriptReader returns its chunks one Read at a time, the last one
// together with io.EOF (as some readers do), and then err (io.EOF if nil);
// with errWithData, err comes with the last chunk.
type scriptReader struct {
	chunks      []string
	err         error
	errWithData bool
}

func (c *scriptReader) Read(b []byte) (int, error) {
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

// blobsOf parses in and returns the objects' blobs, one after another.
func blobsOf(t *testing.T, r io.Reader) (string, int, error) {
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
	got, n, err := blobsOf(t, strings.NewReader(in))
	if err != nil || n != 2 || got != want {
		t.Fatalf("%d objects, %v:\n got %q\nwant %q", n, err, got, want)
	}
}

// The parser drops buffers above keepBytes when a file is done, and
// keeps smaller ones warm, node slices counted in bytes too. (Memory
// only: no output shows it.)
func TestParserReleaseKeepsBuffersUpToKeepBytes(t *testing.T) {
	backing := make([]byte, keepBytes+1)
	nodes := keepBytes / int(unsafe.Sizeof(node{})) // the most nodes within keepBytes
	for _, over := range []int{0, 1} {
		p := new(parser)
		p.w.buf = backing[: 0 : keepBytes+over]
		p.a.strs = backing[: 0 : keepBytes+over]
		p.out = backing[: 0 : keepBytes+over]
		p.a.tmp = backing[: 0 : keepBytes+over]
		p.a.nodes = make([]node, 0, nodes+over)
		p.a.stack = make([]node, 0, nodes+over)
		p.release(keepBytes)
		for name, kept := range map[string]bool{"window": p.w.buf != nil, "strings": p.a.strs != nil,
			"output": p.out != nil, "scratch": p.a.tmp != nil, "nodes": p.a.nodes != nil, "stack": p.a.stack != nil} {
			if want := over == 0; kept != want {
				t.Errorf("%d over: %s buffer kept %v", over, name, kept)
			}
		}
	}
}

// A Parser reused across files gives each file's objects as Parse does,
// also after a document far above keepBytes; it keeps the buffers grown
// for that document (Large) until Trim drops them.
func TestParserReusedAcrossFilesMatchesParse(t *testing.T) {
	big := "schema: olm.bundle\nname: big\npackage: p\ndescription: |\n" + strings.Repeat("  "+strings.Repeat("x", 99)+"\n", 3*keepBytes/100)
	files := []string{"schema: olm.package\nname: p\n", big, `{"schema":"olm.channel","name":"c","package":"p"}`, "schema: olm.package\nname: q\n"}
	x := NewParser()
	for i, f := range files {
		want, _, err := blobsOf(t, strings.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		parse := func(o Object) error { got.Write(o.Blob); return nil }
		if i%2 == 0 {
			err = x.Parse(strings.NewReader(f), parse)
		} else {
			err = x.ParseBytes([]byte(f), parse, BorrowBlobs())
		}
		if err != nil || got.String() != want {
			t.Fatalf("file %d: %v:\n got %.200q\nwant %.200q", i, err, got.String(), want)
		}
		if large := x.Large(); large != (i >= 1) {
			t.Fatalf("file %d: Large() = %v", i, large)
		}
	}
	x.Trim()
	p := &x.p
	for name, c := range map[string]int{"window": cap(p.w.buf), "strings": cap(p.a.strs), "output": cap(p.out),
		"nodes": cap(p.a.nodes) * int(unsafe.Sizeof(node{}))} {
		if c > keepBytes {
			t.Errorf("trimmed, kept a %s buffer of %d bytes", name, c)
		}
	}
	if x.Large() {
		t.Error("Large() after Trim")
	}
}

// The first read that fills the 4096 bytes looked at for a leading '{'
// ends the look-ahead: objects before a later read error still come out.
func TestParseLookAheadStopsAt4096Bytes(t *testing.T) {
	head := "schema: a\n---\nschema: b\npad: "
	head += strings.Repeat("x", peekSize-len(head))
	boom := errors.New("boom")
	_, n, err := blobsOf(t, &scriptReader{chunks: []string{head}, err: boom})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("%d objects, %v; want 1 and %v", n, err, boom)
	}
}

// A reader that keeps returning nothing ends the parse with
// io.ErrNoProgress after 100 tries, even if it would give data later.
func TestParseReaderWithoutProgress(t *testing.T) {
	r := &stallReader{stalls: 150, data: "schema: a\n"}
	_, n, err := blobsOf(t, r)
	if !errors.Is(err, io.ErrNoProgress) || n != 0 {
		t.Fatalf("%d objects, %v; want %v", n, err, io.ErrNoProgress)
	}
}

// stallReader returns (0, nil) stalls times, then data, then io.EOF.
type stallReader struct {
	stalls int
	data   string
}

func (s *stallReader) Read(b []byte) (int, error) {
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
	r := &scriptReader{chunks: []string{`{"schema":"a"}{"schema":"b"}{"schema":"c","pad":"` + long, `"}`}}
	got, n, err := blobsOf(t, r)
	if err != nil || n != 3 || !strings.HasSuffix(got, `{"pad":"`+long+`","schema":"c"}`+"\n") {
		t.Fatalf("%d objects, %v", n, err)
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

// objectsOf parses in (read in the given chunks) and returns the objects'
// blobs, an empty object as "<empty>".
func objectsOf(t *testing.T, chunks ...string) ([]string, error) {
	t.Helper()
	var got []string
	err := Parse(&scriptReader{chunks: chunks}, func(o Object) error {
		if o.Blob == nil {
			got = append(got, "<empty>")
		} else {
			got = append(got, strings.TrimSuffix(string(o.Blob), "\n"))
		}
		return nil
	})
	return got, err
}

// pastPeek fills a first read past the 4096 bytes looked at for a leading '{',
// so that what follows comes in later reads.
var pastPeek = strings.Repeat(" ", peekSize)

// JSON values and the white space between them may be cut anywhere by
// reads.
func TestParseJSONAcrossReads(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"object after a read boundary", []string{`{"schema":"a"}` + pastPeek, `{"schema":"b"}`}, `{"schema":"a"}|{"schema":"b"}`},
		{"null cut by a read", []string{`{"schema":"a"}{"schema":"b"}` + pastPeek + "nu", "ll"}, `{"schema":"a"}|{"schema":"b"}|null`},
		{"white space before YAML cut by a read", []string{`{"schema":"a"}` + pastPeek + "  s", "chema: b\n"}, `{"schema":"a"}|{"schema":"b"}`},
		{"YAML cut by a read right after JSON", []string{`{"schema":"a","pad":"` + pastPeek + `"}s`, "chema: b\n"}, `{"pad":"` + pastPeek + `","schema":"a"}|{"schema":"b"}`},
	} {
		got, err := objectsOf(t, c.chunks...)
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%s: %q, %v; want %s", c.name, got, err, c.want)
		}
	}
}

// A JSON null is handed out as soon as it is read: the parser does not
// read the rest of the stream first.
func TestParseJSONNullStreams(t *testing.T) {
	r := &scriptReader{chunks: []string{`{"schema":"a"}` + "\nnull\n" + pastPeek, `{"schema":"b"}`, `{"schema":"c"}`}}
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
	_, err := objectsOf(t, objs, "7")
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
		got, err := objectsOf(t, c.in)
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
	got, err := objectsOf(t, in)
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
	r := &eofThenMore{}
	got, err := countObjects(r)
	if err != nil || got != 1 {
		t.Fatalf("%d objects, %v; want 1", got, err)
	}
}

type eofThenMore struct{ reads int }

func (e *eofThenMore) Read(b []byte) (int, error) {
	e.reads++
	switch e.reads {
	case 1:
		return copy(b, "schema: a\n"), io.EOF
	case 2:
		return copy(b, "---\nschema: b\n"), nil
	}
	return 0, io.EOF
}

func countObjects(r io.Reader) (int, error) {
	n := 0
	err := Parse(r, func(Object) error { n++; return nil })
	return n, err
}

// YAML lines are split as bufio.ReadLine splits them: a first line may be
// empty, and only the "\r" of a "\r\n" goes.
func TestParseYAMLLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\nschema: a\n---\nschema: b\n", `{"schema":"a"}|{"schema":"b"}`},
		{"schema: a\r\nv: |\r\n  x\r\n  y\r\n", `{"schema":"a","v":"x\ny\n"}`},
		{"schema: a\nv: |\n  x\r\r\n  y\n", `{"schema":"a","v":"x\ny\n"}`},
	} {
		got, err := objectsOf(t, c.in)
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
	_, n, err := blobsOf(t, &scriptReader{chunks: []string{first, "schema: b\n---\nschema: c\n"}, err: boom, errWithData: true})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("%d objects, %v; want 2 and %v", n, err, boom)
	}
}

// With OneLargeAtATime, a document above keepBytes, as YAML or JSON, is
// decoded and handed out holding the mutex; smaller ones do not take it.
func TestOneLargeAtATimeHoldsTheMutexForLargeDocuments(t *testing.T) {
	pad := strings.Repeat("x", keepBytes)
	in := "schema: a\n---\nschema: b\npad: " + pad + "\n---\nschema: c\n"
	json := `{"schema":"a"} {"schema":"b","pad":"` + pad + `"} {"schema":"c"}`
	for _, f := range []string{in, json} {
		var mu sync.Mutex
		var held []bool
		err := Parse(strings.NewReader(f), func(o Object) error {
			free := mu.TryLock()
			if free {
				mu.Unlock()
			}
			held = append(held, !free)
			return nil
		}, OneLargeAtATime(&mu))
		if err != nil || !slices.Equal(held, []bool{false, true, false}) {
			t.Fatalf("%.20q: held %v, %v; want only the large document's", f, held, err)
		}
		if !mu.TryLock() {
			t.Fatal("mutex still held after Parse")
		}
	}
}

// TestParserKeptNodesHoldNoFile: once a file is done, the nodes a parser
// keeps point into none of its bytes (they would keep the file's buffer
// alive), after a file of many small documents, of one large one, and
// after a second file smaller than the first.
func TestParserKeptNodesHoldNoFile(t *testing.T) {
	x := NewParser()
	for _, docs := range []int{50, 1, 3} {
		var b strings.Builder
		for i := range docs {
			fmt.Fprintf(&b, "---\nschema: olm.package\nname: p%d\nkeywords: [%s]\n", i, strings.Repeat("k, ", 200*(1+i%3)/docs)+"k")
		}
		if err := x.ParseBytes([]byte(b.String()), func(Object) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for i, n := range x.p.a.nodes[:cap(x.p.a.nodes)] {
			if n.s != nil {
				t.Fatalf("after %d documents: kept node %d holds %q", docs, i, n.s)
			}
		}
	}
}
