package fbc

// Tests written for the mutants of yamlfast.go that no short test reached.
// Much of that code only decides whether the fast path keeps a document or
// hands it to yaml.v2, which the differential tests cannot see (yaml.v2
// gives the right answer either way), so each case also says which of the
// two must happen.

import "testing"

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

// TestFastYAMLCollections: empty values, indentless sequences (also nested
// ones), empty and commented sequence items, and nested keys, plain or
// quoted.
func TestFastYAMLCollections(t *testing.T) {
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

// TestFastYAMLNumbers: each character mayBeNumber lets through, in a plain
// scalar that is a number (or, for the binary forms, that looks like one
// but is a string). Keys differ after case folding: the reference refuses
// keys that fold alike.
func TestFastYAMLNumbers(t *testing.T) {
	checkFastCases(t, []fastCase{
		{"numbers", "schema: a\nzero: 0\nnine: 19\ndot: 1.5\nlowa: 0xa\nlowf: 0xf\nupa: 0xA\nupf: 0xF\nupx: 0X1F\noct: 0o17\nupo: 0O17\nunder: 1_000\nplus: +5\nminus: -5\nexp: 1e+3\nupexp: 1E-3\nbin: 0b2\nnegbin: -0b2\n", true},
	})
}
