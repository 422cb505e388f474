package fbc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

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
		got, _, err := blobsOf(t, strings.NewReader(in))
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
