package gqlshape

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// mergeLines are objects whose shapes depend on order: a field first seen
// as a scalar then as an array of objects, nested fields that arrive
// late, a schema with no countable object. (Two keys of one object that
// map to one field name are left out: which wins follows Go's map order,
// as in catalogd, so no two observations need agree.)
var mergeLines = []struct{ schema, line string }{
	{"olm.bundle", `{"schema":"olm.bundle","n":1,"props":"none yet"}`},
	{"olm.bundle", `{"schema":"olm.bundle","n":"two","props":[{"type":"a"}]}`},
	{"bad", `{`},
	{"olm.channel", `{"schema":"olm.channel","entries":[{"name":"a"},{"name":"b","skips":["x"]}]}`},
	{"olm.bundle", `{"schema":"olm.bundle","props":[{"type":"b","value":{"k":1}}],"extra":[1,2]}`},
	{"olm.channel", `{"schema":"olm.channel","entries":[{"replaces":"a","skipRange":">1"}]}`},
	{"olm.bundle", `{"schema":"olm.bundle","props":[{"late":true}],"extra":[{"o":1}]}`},
	{"custom", `{"schema":"custom","a-b":1,"c":"x"}`},
}

func testdataLines(t *testing.T) (schemas, lines []string) {
	t.Helper()
	for _, l := range mergeLines {
		schemas, lines = append(schemas, l.schema), append(lines, l.line)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "fbc", "tiny", "configs", "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
		schemas = append(schemas, schemaOf(sc.Text()))
	}
	return schemas, lines
}

func schemaOf(line string) string {
	i := bytes.Index([]byte(line), []byte(`"schema":"`))
	if i < 0 {
		return ""
	}
	rest := line[i+len(`"schema":"`):]
	return rest[:bytes.IndexByte([]byte(rest), '"')]
}

// Merging the shapes of consecutive runs of lines gives, byte for byte,
// the shape of observing every line in order, wherever the runs split.
func TestMergeIsObservingInOrder(t *testing.T) {
	schemas, lines := testdataLines(t)
	want := New()
	for i := range lines {
		want.Observe(schemas[i], []byte(lines[i]))
	}
	wantJSON, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		got, part := New(), New()
		for i := range lines {
			part.Observe(schemas[i], []byte(lines[i]))
			if rng.IntN(3) == 0 || i == len(lines)-1 {
				got.Merge(part)
				part = New()
			}
		}
		b, err := got.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, wantJSON) {
			t.Fatalf("trial %d: merged\n%s\nobserved\n%s", trial, b, wantJSON)
		}
	}
}

// A merged shape shares nothing with what was merged into it.
func TestMergeCopies(t *testing.T) {
	a, b := New(), New()
	b.Observe("s", []byte(`{"schema":"s","l":[{"x":1}]}`))
	a.Merge(b)
	a.Observe("s", []byte(`{"schema":"s","l":[{"y":1}]}`))
	if len(b.Schemas["s"].Fields["l"].Nested) != 1 {
		t.Fatalf("merging changed the merged shape: %+v", b.Schemas["s"].Fields["l"].Nested)
	}
}

// Background.Merge keeps its place among the lines observed around it.
func TestBackgroundMergeInOrder(t *testing.T) {
	schemas, lines := testdataLines(t)
	want := New()
	bg := NewBackground()
	for i := range lines {
		want.Observe(schemas[i], []byte(lines[i]))
		if i%3 == 1 {
			part := New()
			part.Observe(schemas[i], []byte(lines[i]))
			bg.Merge(part)
			continue
		}
		bg.Observe(schemas[i], []byte(lines[i]))
	}
	a, _ := want.Marshal()
	b, _ := bg.Shape().Marshal()
	if !bytes.Equal(a, b) {
		t.Fatalf("background\n%s\nwant\n%s", b, a)
	}
}
