package fbc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// wideObject returns an FBC object with n distinct keys in shuffled order
// (with dups, a fifth of them given twice: the later wins), nested
// objects as wide, and arrays of them, as JSON text.
func wideObject(r *rand.Rand, n, depth int, dups bool) string {
	keys := make([]string, n)
	for i := range keys {
		// Mixed lengths and shared prefixes, so order is not length order.
		keys[i] = fmt.Sprintf("k%s%d-%d", strings.Repeat("a", r.IntN(4)), r.IntN(1000), i)
	}
	if dups {
		keys = append(keys, keys[:n/5]...)
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	b.WriteString("{")
	if depth == 0 {
		b.WriteString(`"schema":"acme.wide","name":"w",`)
	}
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:", k)
		switch {
		case depth < 2 && r.IntN(10) == 0:
			b.WriteString(wideObject(r, 25+r.IntN(40), depth+1, dups))
		case depth < 2 && r.IntN(10) == 0:
			fmt.Fprintf(&b, "[%s,%d,%q]", wideObject(r, 25+r.IntN(10), depth+1, dups), i, k)
		case r.IntN(2) == 0:
			fmt.Fprintf(&b, "%d", r.IntN(1e6))
		default:
			fmt.Fprintf(&b, "%q", fmt.Sprintf("v%d-%d", i, r.IntN(1e6)))
		}
	}
	b.WriteString("}")
	return b.String()
}

// TestWideObjectsSorted: objects of 25 to 100 keys (CSV annotations can be
// that wide), nested, with duplicate keys, come out byte for byte as
// encoding/json writes them (keys sorted, the later duplicate kept), from
// JSON and from YAML files alike.
func TestWideObjectsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 100))
	for n := 25; n <= 100; n += 3 {
		src := wideObject(r, n, 0, n%2 == 0)
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(src))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		// JSON, and the same object as a YAML document (JSON is YAML).
		for _, in := range []string{src, "---\n" + src + "\n"} {
			var got []byte
			if err := Parse(strings.NewReader(in), func(o Object) error { got = o.Blob; return nil }); err != nil {
				t.Fatalf("%d keys: %v", n, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d keys:\n got %s\nwant %s", n, got, want)
			}
		}
	}
}
