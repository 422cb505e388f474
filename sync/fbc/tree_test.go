package fbc

// The arena's string, number, object and metadata rules, checked directly
// against encoding/json and the reference metadata decoding.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// treeStrings mix ASCII, valid multi-byte UTF-8 (with 0x80 and 0xA8/0xA9
// continuation bytes, U+2028/U+2029 and other E2 sequences) and invalid
// bytes in every position.
var treeStrings = []string{
	"", "a", "a b", `"\`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é", "À", "xÀy",
	"€", "✓", "\u2028", "\u2029", "x\u2028y\u2029z", "丩", "〩é", "é", "😀", "a😀",
	"\xff", "a\xffb", "a\xc3", "\xc3(", "\xe2\x80", "x\xe2\x80", "\xef\xbf\xbd",
	"a\xef\xbf\xbdb", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "ab\x80cd€\xfe é",
	"\xe2\x80\xa8\xff\xe2\x80\xa9", "<&>",
}

// encodingJSONString is how s comes out of operator-registry's round
// trip: encoding/json writes invalid bytes as \ufffd, reads that back and
// writes the result again (no HTML escaping).
func encodingJSONString(t *testing.T, s string) string {
	t.Helper()
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &s); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// A string node, written out, is what the round trip makes of the same
// Go string: each invalid byte becomes U+FFFD, only the required
// characters are escaped. Earlier sanitized strings stay intact.
func TestTreeStringsLikeEncodingJSON(t *testing.T) {
	var a arena
	a.reset()
	var nodes []node
	for _, s := range treeStrings {
		nodes = append(nodes, a.str([]byte(s)))
	}
	for i, s := range treeStrings {
		want := "p" + encodingJSONString(t, s)
		if got := appendString([]byte("p"), nodes[i].s); string(got) != want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// Strings with invalid UTF-8 reach the tree from YAML's !!binary values;
// the whole parser must write them as the reference does.
func TestTreeBinaryStringsLikeReference(t *testing.T) {
	for _, s := range []string{"ab\x80cd\xc3\xa9\xfe", "\xe2\x82\xacx\xff", "k\xffey"} {
		b64 := base64.StdEncoding.EncodeToString([]byte(s))
		in := "schema: a\nv: !!binary " + b64 + "\nw: [!!binary " + b64 + "]\n"
		diffAllPaths(t, fmt.Sprintf("binary %q", s), []byte(in))
	}
}

// Numbers are written as encoding/json writes a float64, also after
// other output.
func TestTreeFloatsLikeEncodingJSON(t *testing.T) {
	floats := []float64{
		0, math.Copysign(0, -1), 1, -1, 1.5, -1.5, 0.5, 42, -42, 1e15 - 1, 1e15, -1e15, 1e15 + 2,
		1 << 53, 1<<53 + 2, 1 << 62, 1 << 63, 12345678901234567890, 1e20, -1e20, 1e21, -1e21,
		1.5e21, 1e22, 1e-6, -1e-6, 1e-7, -1e-7, 1.5e-7, 1.5e-10, 1e-100, 1e100, 1e-300,
		1e300, 5e-324, math.MaxFloat64, 123456789.125, 0.1, 0.000001234, 9.999999e-7,
	}
	for _, f := range floats {
		j, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"", "[", `{"e-":`, "1e-0,"} {
			if got := appendFloat([]byte(prefix), f); string(got) != prefix+string(j) {
				t.Errorf("%v after %q: got %s, want %s%s", f, prefix, got, prefix, j)
			}
		}
	}
}

// treeRoot decodes doc (JSON) into a fresh arena.
func treeRoot(t *testing.T, doc string) (*arena, node) {
	t.Helper()
	a := &arena{}
	a.reset()
	p := jsonParser{a: a, src: []byte(doc)}
	n, err := p.value()
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return a, n
}

// meta accepts and rejects what operator-registry's Meta decoding
// does, and finds the same schema, package and name.
func TestTreeMetaLikeReference(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `"s"`, `1`, `null`,
		`{"schema":"s","package":"p","name":"n"}`,
		`{"Schema":"s","PACKAGE":"p","nAmE":"n","x":1}`,
		`{"a":1,"b":2,"name":"n","schema":"s","z":[1]}`,
		`{"A":1,"a":2}`, `{"Z":1,"z":2}`, `{"@":1,"` + "`" + `":2}`, `{"[":1,"{":2}`,
		`{"1":1,"Q":2}`, `{"Ä":1,"ä":2}`, `{"ÄÖ":1,"äö":2}`, `{"Σ":1,"σ":2,"ς":3}`,
		`{"Ä":1,"b":2}`, `{"é":1,"É":2,"x":3}`, `{"k":1,"\u212a":2}`, `{"ſchema":"s"}`,
		`{"schema":1}`, `{"a":1,"b":2,"name":[1],"schema":"s"}`, `{"package":null}`,
		`{"name":{},"schema":"s"}`, `{"AB":1,"ab":2,"Ab":3,"c":4,"C":5}`,
		`{"x":1,"y":2,"X":3}`, `{"schema":"s","Schema":"t"}`,
	}
	for _, doc := range docs {
		a, root := treeRoot(t, doc)
		schema, pkg, name, err := a.meta(root)
		var want refMeta
		var werr error
		if root.kind == kObj {
			m := map[string]any{}
			if err := json.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			werr = refMetaKeys(m, &want)
		}
		if (err == nil) != (werr == nil) {
			t.Errorf("%s: error %v, reference %v", doc, err, werr)
			continue
		}
		if err == nil && (schema != want.schema || pkg != want.pkg || name != want.name) {
			t.Errorf("%s: %q %q %q, reference %q %q %q", doc, schema, pkg, name, want.schema, want.pkg, want.name)
		}
	}
}

// meta's messages name the keys concerned, every pair that folds alike.
func TestTreeMetaMessages(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":1,"b":2,"name":[1],"schema":"s"}`:       `expected value for key "name" to be a string, got array`,
		`{"a":1,"b":2,"c":3,"d":4,"schema":{}}`:       `expected value for key "schema" to be a string, got object`,
		`{"Name":1,"name":2}`:                         `duplicate keys for key "name": [Name name]`,
		`{"AB":1,"Ab":2,"ab":3,"c":4,"C":5}`:          "duplicate keys for key \"ab\": [AB Ab]\nduplicate keys for key \"ab\": [AB ab]\nduplicate keys for key \"ab\": [Ab ab]\nduplicate keys for key \"c\": [C c]",
		`{"a":1,"x":2,"é":3,"É":4}`:                   `duplicate keys for key "é": [É é]`,
		`{"b":1,"schema":"s","\u212a":2,"k":3,"z":4}`: "duplicate keys for key \"k\": [k \u212a]",
	} {
		a, root := treeRoot(t, doc)
		_, _, _, err := a.meta(root)
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", doc, err, want)
		}
	}
}

// sortPairs is a stable sort of the pairs by key, whatever their number,
// order and values: small objects, the insertion sort's limit and wide ones.
func TestTreeSortPairsStable(t *testing.T) {
	keys := []string{"b", "a", "ab", "", "b", "a", "c", "aa"}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 8, 13, 23, 24, 25, 26, 40} {
		for _, order := range []string{"mixed", "sorted", "reversed"} {
			kv := make([]node, 0, 2*n)
			for i := range n {
				k := keys[(i*5+n)%len(keys)] + strings.Repeat("z", i%3)
				// String values sort after every key: the already-sorted
				// check must look at keys only.
				kv = append(kv, node{kind: kStr, s: []byte(k)}, node{kind: kStr, s: []byte(fmt.Sprint("~", i))})
			}
			ps := make([]pair, n)
			for i := range ps {
				ps[i] = pair{kv[2*i], kv[2*i+1]}
			}
			cmp := func(x, y pair) int { return bytes.Compare(x.k.s, y.k.s) }
			switch order {
			case "sorted":
				slices.SortStableFunc(ps, cmp)
			case "reversed":
				slices.SortStableFunc(ps, func(x, y pair) int { return -cmp(x, y) })
			}
			for i, p := range ps {
				kv[2*i], kv[2*i+1] = p.k, p.v
			}
			slices.SortStableFunc(ps, cmp)
			sortPairs(kv)
			for i, p := range ps {
				if !bytes.Equal(kv[2*i].s, p.k.s) || !bytes.Equal(kv[2*i+1].s, p.v.s) {
					t.Fatalf("%d pairs %s: pair %d is %q=%q, want %q=%q", n, order, i, kv[2*i].s, kv[2*i+1].s, p.k.s, p.v.s)
				}
			}
		}
	}
}

// endObj and endArr take exactly the children pushed since their mark,
// the last of equal keys winning, and leave the outer ones in place.
func TestTreeEndContainers(t *testing.T) {
	var a arena
	a.reset()
	str := func(s string) node { return a.str([]byte(s)) }
	num := func(f float64) node { return node{kind: kNum, f: f} }
	outer := a.mark()
	a.push(str("z"))
	inner := a.mark()
	for i, k := range []string{"b", "a", "b", "c", "a", "a"} {
		a.push(str(k))
		a.push(num(float64(i)))
	}
	obj := a.endObj(inner)
	a.push(obj)
	arr := a.mark()
	a.push(num(7))
	a.push(node{kind: kNull})
	a.push(a.endArr(arr))
	top := a.endArr(outer)
	if len(a.stack) != 0 {
		t.Fatalf("stack left with %d nodes", len(a.stack))
	}
	if got, want := string(a.encode(nil, top)), `["z",{"a":5,"b":2,"c":3},[7,null]]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// scratch gives n bytes, reusing its buffer when it is large enough.
func TestTreeScratch(t *testing.T) {
	var a arena
	if b := a.scratch(0); len(b) != 0 {
		t.Fatalf("len %d", len(b))
	}
	b := a.scratch(8)
	if len(b) != 8 {
		t.Fatalf("len %d", len(b))
	}
	b[0] = 'x'
	for _, n := range []int{8, 3} {
		if c := a.scratch(n); len(c) != n || &c[0] != &b[0] {
			t.Fatalf("scratch(%d) after scratch(8): len %d, same buffer %v", n, len(c), &c[0] == &b[0])
		}
	}
	if c := a.scratch(9); len(c) != 9 {
		t.Fatalf("len %d", len(c))
	}
}
