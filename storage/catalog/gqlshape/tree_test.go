package gqlshape

import (
	"encoding/json"
	"slices"
	"testing"
)

// decoded is a Value over encoding/json's decoding of a line, keys in
// order: the tree a parser would hand ObserveTree for that line.
type decoded struct{ v any }

func (d decoded) Kind() byte {
	switch x := d.v.(type) {
	case nil:
		return 'n'
	case bool:
		return 't'
	case float64:
		return '0'
	case string:
		return '"'
	case []any:
		return '['
	default:
		_ = x
		return '{'
	}
}

func (d decoded) Float() float64 { return d.v.(float64) }

func (d decoded) Len() int {
	switch x := d.v.(type) {
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 0
}

func (d decoded) Elem(i int) decoded { return decoded{d.v.([]any)[i]} }

func (d decoded) Member(i int) ([]byte, decoded) {
	m := d.v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return []byte(keys[i]), decoded{m[keys[i]]}
}

// sameAsTree observes lines (as a parser writes them) one after another with Observe's fast path
// and with ObserveTree's, and compares the shapes after each. A line both
// decline ends the run: Observe then decodes it into a map, and where two
// keys share a GraphQL name the map's random order decides, for catalogd
// too.
func sameAsTree(t *testing.T, lines ...string) {
	t.Helper()
	byLine, byTree := New(), New()
	scLine, scTree := &Schema{Fields: map[string]*Field{}}, &Schema{Fields: map[string]*Field{}}
	byLine.Schemas["x"], byTree.Schemas["x"] = scLine, scTree
	for _, l := range lines {
		var v any
		if json.Unmarshal([]byte(l), &v) != nil {
			return // no parser hands out a tree for it
		}
		// The line a parser writes for that tree: keys unique.
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fast := byLine.observeFast(scLine, line)
		tree := treeObserver[decoded]{byTree, scTree}.observe(decoded{v})
		if fast != tree {
			t.Fatalf("%q: fast path took it %v, tree %v", l, fast, tree)
		}
		a, _ := byLine.Marshal()
		b, _ := byTree.Marshal()
		if string(a) != string(b) {
			t.Fatalf("after %q:\nObserve     %s\nObserveTree %s", l, a, b)
		}
		if !fast {
			return
		}
	}
}

// TestObserveTreeFallsBack: a tree the shape cannot take is observed from
// its line.
func TestObserveTreeFallsBack(t *testing.T) {
	for _, l := range []string{`{"A":1,"b":2}`, `{"a":[{"k-1":1,"k_1":2}]}`, `[1]`} {
		var v any
		json.Unmarshal([]byte(l), &v)
		byLine, byTree := New(), New()
		byLine.Observe("x", []byte(l))
		ObserveTree(byTree, "x", decoded{v}, []byte(l))
		a, _ := byLine.Marshal()
		b, _ := byTree.Marshal()
		if string(a) != string(b) {
			t.Errorf("%s: Observe %s, ObserveTree %s", l, a, b)
		}
	}
	s := New()
	ObserveTree(s, "", decoded{map[string]any{}}, []byte(`{}`))
	if len(s.Schemas) != 0 {
		t.Error("an object without a schema was listed")
	}
}

func TestObserveTreeMatchesObserve(t *testing.T) {
	sameAsTree(t,
		`{"schema":"olm.bundle","n":1,"f":1.5,"b":true,"o":{"a":1},"props":[{"type":"x","value":{"k":1}},{"extra":[2]}],"mixed":[1,"a"],"empty":[],"nil":null}`,
		`{"schema":"olm.bundle","n":"now a string","props":[{"late":false},{"type":3,"more":[]}],"nil":[{"x":1}],"o":[{}]}`,
		`{"props":"a string now","empty":[{"k":[null,1]}],"mixed":[{"m":1},2]}`,
	)
	sameAsTree(t,
		`{"a":[null,null],"b":[null,{"x":[null,1]}],"c":["s",{"y":1}],"d":[{"z":1},"s"],"e":[1,2,3,4,5,6,7,8,9,10,{"late":1}]}`,
		`{"a":[{}],"b":[{"x":"now a string","w":false}],"e":[{"early":1}]}`,
	)
	// Two keys with one GraphQL name: the tree declines, the line decides.
	sameAsTree(t, `{"a-b":1,"zz":2}`, `{"a_b":[{"k":1,"K":2}],"q":1}`, `{"p":[{"k":1},{"x-y":1,"x_y":2}]}`)
	sameAsTree(t, `{"A":1,"a":2}`)
	sameAsTree(t, `{"n":9007199254740993,"m":1e19,"k":-0.0,"u":"\u00e9"}`, `{"\u00e9":1}`)
	sameAsTree(t, `[1]`, `"s"`, `{}`)
}

// FuzzObserveTreeMatchesObserve: on any pair of lines the two agree.
func FuzzObserveTreeMatchesObserve(f *testing.F) {
	f.Add(`{"schema":"olm.bundle","properties":[{"type":"olm.package","value":{"packageName":"a"}}]}`, `{"properties":[{"type":1,"x":[]}]}`)
	f.Add(`{"a":[1,"b",{"c":[2.5]}],"d":"\u0041\n"}`, `{"a":[{"C":[]}],"d":[]}`)
	f.Fuzz(func(t *testing.T, a, b string) { sameAsTree(t, a, b) })
}

// Keys with one GraphQL name give the same shape every time, at the top
// and in objects of an array: catalogd decides by Go's random map order,
// and a stored shape must not change between two syncs of one catalog.
func TestCollidingKeysDecideTheSameEveryTime(t *testing.T) {
	for _, l := range []string{
		`{"A":1,"a":"x","b_c":true,"b-c":2.5}`,
		`{"a":[{"k-1":1,"k_1":"x","k.1":true},{"z":1}]}`,
	} {
		var first string
		for i := range 64 {
			s := New()
			s.Observe("x", []byte(l))
			b, _ := s.Marshal()
			if i == 0 {
				first = string(b)
			} else if string(b) != first {
				t.Fatalf("%s: run %d gave %s, run 0 %s", l, i, b, first)
			}
		}
	}
}
