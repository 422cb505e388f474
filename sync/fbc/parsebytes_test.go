package fbc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// collectAll runs parse and records every object's fields and the error.
func collectAll(parse func(fn func(Object) error) error) string {
	var b strings.Builder
	err := parse(func(o Object) error {
		fmt.Fprintf(&b, "%s|%s|%s|%s", o.Schema, o.Package, o.Name, o.Blob)
		return nil
	})
	fmt.Fprintf(&b, "err=%v", err)
	return b.String()
}

// sameBytesResult checks that ParseBytes gives what Parse of a reader
// gives, and leaves data as it was.
func sameBytesResult(t testing.TB, name string, data []byte) {
	t.Helper()
	want := collectAll(func(fn func(Object) error) error { return Parse(bytes.NewReader(data), fn) })
	before := bytes.Clone(data)
	got := collectAll(func(fn func(Object) error) error { return ParseBytes(data, fn) })
	if got != want {
		t.Fatalf("%s: ParseBytes differs from Parse:\nParse      %.500s\nParseBytes %.500s", name, want, got)
	}
	if !bytes.Equal(data, before) {
		t.Fatalf("%s: ParseBytes changed its input", name)
	}
}

func TestParseBytesMatchesParse(t *testing.T) {
	eachCatalogFile(t, func(f string, data []byte) { sameBytesResult(t, f, data) })
	for name, in := range edgeCases {
		sameBytesResult(t, name, []byte(in))
	}
}

// TestParseBytesKeepsNoReference: the caller's buffer is neither kept nor
// written by later parses that reuse the parser.
func TestParseBytesKeepsNoReference(t *testing.T) {
	data := []byte("schema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n")
	buf := make([]byte, len(data), 256<<10) // room a parser would read into
	copy(buf, data)
	if err := ParseBytes(buf, func(Object) error { return nil }); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("schema: olm.package\nname: zzzzzzzzzzzzzzzz\n---\n", 500)
	for range 8 {
		if err := Parse(strings.NewReader(other), func(Object) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(buf[:len(data)], data) || bytes.Contains(buf[:cap(buf)], []byte("zzzz")) {
		t.Fatal("a later parse wrote into the buffer ParseBytes was given")
	}
}
