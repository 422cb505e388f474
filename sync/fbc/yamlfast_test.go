package fbc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fast YAML path exists so that ordinary catalog documents skip
// yaml.v2. When it declines a document the slow path still gives the same
// bytes, so the differential tests cannot see a fast path that declines
// too much. These white-box tests pin which documents it takes, and that
// what it writes for them is what the yaml.v2 path writes.

// fastOnly runs only the fast path on doc (which ends in '\n', as the
// splitter guarantees) and returns its encoding, or ok false when it
// declines.
func fastOnly(doc string) (out string, ok bool) {
	var a arena
	var f fastYAML
	root, ok := f.parse(&a, []byte(doc))
	if !ok {
		return "", false
	}
	return string(a.encode(nil, root)), true
}

// slowOnly returns the yaml.v2 path's encoding of doc.
func slowOnly(t testing.TB, doc string) string {
	t.Helper()
	var a arena
	root, err := a.slowYAML([]byte(doc))
	if err != nil {
		t.Fatalf("yaml.v2 path fails on %q: %v", doc, err)
	}
	return string(a.encode(nil, root))
}

// fastAccepts asserts the fast path takes doc and encodes it as the
// yaml.v2 path does.
func fastAccepts(t testing.TB, doc string) {
	t.Helper()
	got, ok := fastOnly(doc)
	if !ok {
		t.Fatalf("fast path declines %q", doc)
	}
	if want := slowOnly(t, doc); got != want {
		t.Fatalf("fast path on %q:\n got %s\nwant %s", doc, got, want)
	}
}

// fastDeclines asserts the fast path gives doc up (to yaml.v2).
func fastDeclines(t testing.TB, doc string) {
	t.Helper()
	if got, ok := fastOnly(doc); ok {
		t.Fatalf("fast path takes %q (gives %s); it should leave it to yaml.v2", doc, got)
	}
}

func TestFastYAMLTakesDocumentStart(t *testing.T) {
	for _, doc := range []string{
		"schema: a\nname: b\n",
		"---\nschema: a\n",
		"---   \nschema: a\n",
		"--- # comment\nschema: a\n",
		"---  #c\n\nschema: a\n",
	} {
		fastAccepts(t, doc)
	}
	// "---#" is no document marker: a plain scalar, yaml.v2's business.
	fastDeclines(t, "---#c\nschema: a\n")
}

// parse relies on a final newline to stop its scans; the splitter always
// adds one, and parse refuses input without it rather than run off the end.
func TestFastYAMLNeedsFinalNewline(t *testing.T) {
	for _, doc := range []string{"", "schema: a", "schema: a\nname: b"} {
		fastDeclines(t, doc)
	}
}

// Every document of the bundled catalogs is plain catalog YAML: the fast
// path must take each one (the differential tests check its bytes).
func TestFastYAMLTakesBundledCatalogs(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/fbc/*/configs/*.yaml")
	more, _ := filepath.Glob("../../testdata/fbc/*/configs/*/*.yaml")
	files = append(files, more...)
	if len(files) < 2 {
		t.Fatalf("bundled catalogs missing: %v", files)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := splitter{w: &window{r: bytes.NewReader(data)}, line: 1}
		for {
			doc, line, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if _, ok := fastOnly(string(doc)); !ok {
				t.Errorf("%s: fast path declines the document at line %d", file, line)
			}
		}
	}
}

// Collections as catalogs nest them: sequences indented under their key
// or not, items that are multi-key mappings, quoted keys.
func TestFastYAMLTakesCollections(t *testing.T) {
	for _, doc := range []string{
		"schema: a\nm:\n  - 1\n  - x\n",
		"schema: a\nm:\n  k:\n    - 1\n    - 2\n  z: 3\n",
		"schema: a\nl:\n- name: x\n  replaces: y\n- name: z\n  skips:\n  - a\n  - b\n",
		"schema: a\nl:\n  - a: 1\n    b:\n      c: 2\n  - d: 3\n",
		"schema: a\nm:\n  \"k\": v\n  'q' : w\nl:\n- 'x y': 1\n  z: 2\n",
		"schema: a\n'it''s': 1\n'': 2\n\"\": 3\n",
		"schema: a\nl:\n- 'a'\n\n- \"b\"\n\n- c\n",
		"schema: a\nm: {}\nl: []\ns:\n- {}\n- []\n",
	} {
		fastAccepts(t, doc)
	}
}

// Depth bookkeeping: many sibling collections are no deeper than one.
func TestFastYAMLTakesManyCollections(t *testing.T) {
	var b strings.Builder
	b.WriteString("schema: a\n")
	for i := range 2 * maxFastDepth {
		fmt.Fprintf(&b, "k%d:\n- x\nm%d:\n  v: 1\n", i, i)
	}
	fastAccepts(t, b.String())
}

// Plain scalars that yaml.v2 resolves to numbers through its float rule
// (after dropping '_'), and ones it leaves as strings.
func TestFastYAMLTakesNumbers(t *testing.T) {
	fastAccepts(t, "schema: a\n"+
		"v1: 1.5\nv2: -1.5\nv3: +1.5\nv4: -.5\nv5: .5\nv6: 3.\nv7: 1e5\nv8: 1E-3\nv9: -2.5e+2\n"+
		"w1: 1_000.5\nw2: 1_\nw3: 1__0\nw4: 0.3.0\nw5: 1.2.3.4\nw6: +\nw7: 1e\nw8: '-.5'\n")
}

// Escapes at the edges of what they may encode.
func TestFastYAMLTakesEscapes(t *testing.T) {
	fastAccepts(t, "schema: a\nk: \"\\U0010FFFF\\x7E\\u00e9\\uFFFD\"\nl: \"a\\tb\\\\c\\\"d\"\n")
	fastDeclines(t, "schema: a\nk: \"\\U00110000\"\n")
}

// Scalars spread over lines: folded plain and quoted scalars, block scalars
// with every header form, nested block scalars.
func TestFastYAMLTakesMultilineScalars(t *testing.T) {
	for _, doc := range []string{
		"schema: a\nd: this is\n  a long\n\n  folded plain\n\n\n    scalar\nz: x\n",
		"schema: a\nl:\n- one\n  two\n- three\n",
		"schema: a\ns: 'one\n  two\n\n  three'\nd: \"one\n  two\n\n\n  three \\\n  four\"\n",
		"schema: a\nk: |\n  x\n\n  y\n\n\nz: 1\n",
		"schema: a\nk: |-\n  x\n\nl: |+\n  y\n\n\nm: >\n  a\n  b\n\n  c\n   d\n  e\nz: 1\n",
		"schema: a\nk: |2\n    x\n   y\nl: |1-\n  x\n z\n\nm: |2+\n   w\n\n",
		"schema: a\nk: >2-\n   x\n\n\nl: >-2\n   y\n\nm: |+1\n  v\n\n",
		"schema: a\nm:\n  k: |\n    x\n     y\n  z: 1\n",
		"schema: a\nl:\n- |\n  x\n- >-\n  y\n",
		"schema: a\nk: |\n   \n",
	} {
		fastAccepts(t, doc)
	}
}

// A '#' starts a comment only after a space: "k #c: v" holds no key.
func TestFastYAMLCommentEndsKey(t *testing.T) {
	diffAllPaths(t, "comment in key", []byte("schema: a\nk #c: v\n"))
	fastDeclines(t, "schema: a\nk #c: v\n")
	fastAccepts(t, "schema: a\nk#c: v\nv1: v#w\nv2: v # c\nv3: v #c\nv4: v# c\nv5: x\n  y #c\nv6: x\n  y# c\n")
}

// Quoted scalars left open at the end of the document are errors for
// yaml.v2; the fast path must give them up, not read past the end.
func TestFastYAMLUnterminatedQuotes(t *testing.T) {
	for _, doc := range []string{
		"schema: a\nk: \"abc\n",
		"schema: a\nk: 'abc\n",
		"schema: a\nk: \"abc\n  def\n",
		"schema: a\nk: \"abc\\\n",
		"schema: a\nk: 'it''s\n\n",
	} {
		fastDeclines(t, doc)
		diffAllPaths(t, doc, []byte(doc))
	}
}

// A quoted key opening a nested mapping or a sequence item, with spaces
// before its ':' or its value on the next lines.
func TestFastYAMLTakesQuotedFirstKeys(t *testing.T) {
	for _, doc := range []string{
		"schema: a\nm:\n  'q' : w\n  r: s\nl:\n- 'x'  : 1\n  z: 2\n",
		"schema: a\nm:\n  \"k\":\n    v: 1\nl:\n- 'x':\n    z: 1\n",
	} {
		fastAccepts(t, doc)
	}
}

// UTF-8 text is plain content; characters YAML reads otherwise (C0
// controls, DEL, NEL, LS, PS, BOM) are left to yaml.v2.
func TestFastYAMLTakesUnicode(t *testing.T) {
	fastAccepts(t, "schema: a\nname: héllo wörld ✓ 😀\nv: 日本語 \u00a0x\n")
	for _, c := range []string{"\t", "\x7f", "\u0085", "\u2028", "\u2029", "\ufeff", "\x01"} {
		fastDeclines(t, "schema: a\nv: x"+c+"y\n")
	}
}

// Every hex digit class at its edges, in escapes and in numbers, and the
// integer forms yaml.v2 resolves through strconv (prefixes, uint64, binary).
func TestFastYAMLTakesHexAndIntegers(t *testing.T) {
	fastAccepts(t, "schema: a\nk: \"\\u09aF\\uFa90\\u0Af9\\x7e\"\n"+
		"i1: 0x9aAfF0\ni2: 0X1f\ni3: 0o17\ni4: 0O7\ni5: 017\ni6: 0b101\ni7: -0b101\ni8: +0x10\n"+
		"i9: 18446744073709551615\nj1: 9223372036854775808\nj2: -9223372036854775808\n"+
		"j3: 0b1111111111111111111111111111111111111111111111111111111111111111\nj4: 1_0_0\nj5: 0x_1\n"+
		"j6: 0xg\nj7: 9\nj8: 0\nj9: 1e+9\n")
	fastAccepts(t, "schema: a\nk: |9\n         x\nl: |9-\n          y\n")
}

// Plain scalars that look like numbers but are not, floats out of range,
// and an empty block scalar in a nested mapping.
func TestFastYAMLNumberLookalikes(t *testing.T) {
	fastAccepts(t, "schema: a\nv1: 0b2\nv2: -0b2\nv3: 0bx\nv4: .x\nv5: -0x\nv6: 1e5e\n"+
		"v7: 0b11111111111111111111111111111111111111111111111111111111111111111\n")
	// yaml.v2 keeps 1e400 a string (ParseFloat fails with a range error).
	for _, doc := range []string{"schema: a\nv: 1e400\n", "schema: a\nv: -1e400\n"} {
		diffAllPaths(t, doc, []byte(doc))
		fastAccepts(t, doc)
	}
	fastAccepts(t, "schema: a\nm:\n  k: |\n  z: 1\n")
}

// fastCase is a document, and whether the fast path must decode it itself
// (fast) rather than give up and leave it to yaml.v2.
type fastCase struct {
	name string
	doc  string
	fast bool
}

// checkFastCases runs each case through the fast path alone, then compares
// the whole parser's output with the reference decoder's.
func checkFastCases(t *testing.T, cases []fastCase) {
	t.Helper()
	for _, c := range cases {
		var a arena
		var f fastYAML
		if _, ok := f.parse(&a, []byte(c.doc)); ok != c.fast {
			t.Errorf("%s: fast path took %q: %v, want %v", c.name, c.doc, ok, c.fast)
		}
		want := runReference([]byte(c.doc))
		if c.fast && want.err != nil {
			t.Errorf("%s: the reference decoder refuses %q: %v", c.name, c.doc, want.err)
		}
		sameAs(t, c.name, []byte(c.doc), want, false, 0)
	}
}

// TestFastYAMLCharacters: plainChars lets through the non-ASCII characters
// libyaml reads as ordinary ones (including the edges of its ranges and a
// literal U+FFFD) and refuses invalid UTF-8.
func TestFastYAMLCharacters(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"non-ascii", "schema: a\nk: \u00e9\u00a0x\ue000\ufffd\U0001F600\n", true},
		{"invalid utf8", "schema: a\nk: a\xffb\n", false},
	})
}

// TestFastYAMLLines: nextContent skips blank and comment lines, and gives up
// only on a directive or document end marker at the start of a line.
func TestFastYAMLLines(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"indented dots key", "schema: a\n\n# c\nk:\n  ...: x\n", true},
		// libyaml ends the document at "... "; the rest is not read.
		{"document end then key", "schema: a\n... : x\n", false},
	})
}

// TestFastYAMLEmptyAndIndentlessCollections: empty values, indentless sequences (also nested
// ones), empty and commented sequence items, and nested keys, plain or
// quoted.
func TestFastYAMLEmptyAndIndentlessCollections(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"empty value then sibling", "schema: a\nk:\nz: 1\n", true},
		{"nested maps", "schema: a\nm:\n  mm:\n    o: 1\n  p: x\n", true},
		{"indentless seqs", "schema: a\nk:\n- a\n- b\nm:\n  mm:\n  - c\n", true},
		{"seq items", "schema: a\nl:\n- a\n-\n- # c\n- b: 1\n  c: 2\n-\n  d: 3\n", true},
		{"nested keys", "schema: a\nm:\n  \"q\": 1\nmm:\n  p: 2\nl:\n- 'r': 3\n- s: 4\n", true},
		{"quoted keys", "schema: a\n\"a\\\"b\": 1\n'c''d': 2\n\"e\": 3\n'f': 4\n", true},
	})
}

// TestFastYAMLHexEscapes: every kind of hex digit at the edges of its range,
// and a character that is none.
func TestFastYAMLHexEscapes(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"hex digits", "schema: a\nk: \"\\x30\\x39\\xaa\\xff\\xAF\\u00e9\"\n", true},
		{"bad hex digit", "schema: a\nk: \"\\xg0\"\n", false},
		// The edges of the surrogates and of Unicode: what cannot be a
		// character is left to the reference decoder.
		{"below the surrogates", "schema: a\nk: \"\\uD7FF\"\n", true},
		{"first surrogate", "schema: a\nk: \"\\uD800\"\n", false},
		{"last surrogate", "schema: a\nk: \"\\uDFFF\"\n", false},
		{"above the surrogates", "schema: a\nk: \"\\uE000\"\n", true},
		{"last code point", "schema: a\nk: \"\\U0010FFFF\"\n", true},
		{"past the last code point", "schema: a\nk: \"\\U00110000\"\n", false},
	})
}

// TestFastYAMLBlockHeaders: chomping and indentation indicators in both
// orders.
func TestFastYAMLBlockHeaders(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"block headers", "schema: a\nk: |+2\n    x\n\nl: |-\n  y\nm: >2-\n   z\nw: |\n  w\n\n", true},
	})
}

// TestFastYAMLNumberCharacters: each character mayBeNumber lets through, in a plain
// scalar that is a number (or, for the binary forms, that looks like one
// but is a string). Keys differ after case folding: the reference refuses
// keys that fold alike.
func TestFastYAMLNumberCharacters(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"numbers", "schema: a\nzero: 0\nnine: 19\ndot: 1.5\nlowa: 0xa\nlowf: 0xf\nupa: 0xA\nupf: 0xF\nupx: 0X1F\noct: 0o17\nupo: 0O17\nunder: 1_000\nplus: +5\nminus: -5\nexp: 1e+3\nupexp: 1E-3\nbin: 0b2\nnegbin: -0b2\n", true},
	})
}
