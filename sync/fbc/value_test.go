package fbc

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
)

// sameShape parses data and checks that every object's Root gives the
// GraphQL shape its Blob gives, object by object and for the whole input.
// Objects where two keys the shape reads share a GraphQL name are left
// out: for those the line decides through a map, in random order.
func sameShape(t testing.TB, name string, data []byte, noFast bool) {
	t.Helper()
	byLine, byTree := gqlshape.New(), gqlshape.New()
	p := parser{noFast: noFast}
	p.fn = func(o Object) error {
		if nameClash(o.Root) {
			return nil
		}
		one, other := gqlshape.New(), gqlshape.New()
		one.Observe(o.Schema, o.Blob)
		gqlshape.ObserveTree(other, o.Schema, o.Root, o.Blob)
		byLine.Observe(o.Schema, o.Blob)
		gqlshape.ObserveTree(byTree, o.Schema, o.Root, o.Blob)
		if a, b := marshal(t, one), marshal(t, other); a != b {
			t.Fatalf("%s: object %s:\nline %s\ntree %s", name, o.Blob, a, b)
		}
		return nil
	}
	p.run(bytes.NewReader(data))
	if a, b := marshal(t, byLine), marshal(t, byTree); a != b {
		t.Fatalf("%s: whole input:\nline %s\ntree %s", name, a, b)
	}
}

func marshal(t testing.TB, s *gqlshape.Shape) string {
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nameClash reports whether two keys of the object, or of an object in
// one of its arrays, share a GraphQL field name.
func nameClash(v Value) bool {
	if v.Kind() != '{' {
		return false
	}
	seen := map[string]bool{}
	for i := range v.Len() {
		k, e := v.Member(i)
		n := gqlshape.FieldName(string(k))
		if seen[n] {
			return true
		}
		seen[n] = true
		if e.Kind() == '[' {
			for j := range e.Len() {
				if nameClash(e.Elem(j)) {
					return true
				}
			}
		}
	}
	return false
}

// eachCatalogFile calls fn with every file of the bundled catalogs and,
// where useShared, of community-v4.21.
func eachCatalogFile(t testing.TB, fn func(path string, data []byte)) {
	t.Helper()
	dirs := []string{"../../testdata/fbc/tiny/configs", "../../testdata/fbc/community-v4.21-3pkgs/configs"}
	if useShared(t) {
		dirs = append(dirs, sharedFBC+"/community-v4.21/configs")
	}
	for _, dir := range dirs {
		for _, f := range catalogFiles(t, dir) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fn(f, data)
		}
	}
}

func TestRootShapeMatchesBlob(t *testing.T) {
	eachCatalogFile(t, func(f string, data []byte) {
		sameShape(t, f, data, false)
		if strings.HasSuffix(f, ".yaml") {
			sameShape(t, f, data, true)
		}
	})
	for name, in := range edgeCases {
		sameShape(t, name, []byte(in), false)
		sameShape(t, name, []byte(in), true)
	}
}

// TestRootValue: Root reads the object being handed out, and
// the zero Value reads as nothing.
func TestRootValue(t *testing.T) {
	var kinds []byte
	err := Parse(strings.NewReader(`{"schema":"x","a":[1,"s",true,null,{}],"b":false}`), func(o Object) error {
		r := o.Root
		if r.Kind() != '{' || r.Len() != 3 {
			t.Fatalf("root: kind %c len %d", r.Kind(), r.Len())
		}
		k, a := r.Member(0)
		if string(k) != "a" || a.Len() != 5 || a.Elem(0).Float() != 1 {
			t.Fatalf("member 0: %s, len %d", k, a.Len())
		}
		for i := range a.Len() {
			kinds = append(kinds, a.Elem(i).Kind())
		}
		if _, b := r.Member(1); b.Kind() != 't' || b.Len() != 0 {
			t.Fatalf("member 1: kind %c", b.Kind())
		}
		return nil
	})
	if err != nil || string(kinds) != `0"tn{` {
		t.Fatalf("kinds %q, err %v", kinds, err)
	}
	if v := (Value{}); v.Kind() != 0 || v.Len() != 0 {
		t.Error("zero Value")
	}
}
