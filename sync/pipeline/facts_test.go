package pipeline

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"unsafe"

	"github.com/catalogsync/catalogsync/sync/fbc"
)

// fill sets every field of v, recursively, to a value that differs with
// seed: a field added to fbc.Ref and forgotten by the encoding fails the
// round trip below.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*seed%26)) + string(rune('0'+*seed%10)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*seed))
	case reflect.Uint8:
		v.SetUint(uint64(*seed))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed)
		}
		v.Set(s)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			v.Index(i).Set(reflect.ValueOf(uint8(*seed + i)))
		}
	default:
		panic("fill: " + v.Kind().String())
	}
}

func TestFactsRoundTrip(t *testing.T) {
	seed := 0
	var f fileFacts
	fill(reflect.ValueOf(&f).Elem(), &seed)
	f.Objects = append(f.Objects, objFact{Schema: "x.custom", N: 7}) // no Ref
	f.Len = 0
	for _, o := range f.Objects {
		f.Len += o.N
	}
	b := appendFacts(nil, &f)
	n, k := binary.Uvarint(b)
	if k <= 0 || int(n) != len(b)-k {
		t.Fatalf("record length %d, %d bytes follow", n, len(b)-k)
	}
	got, err := decodeFacts(b[k:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &f) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, &f)
	}
	if got.Objects[0].Ref.HasObjects != true || got.Objects[2].Ref != nil {
		t.Fatal("HasObjects or a nil Ref lost")
	}
}

// Every damaged record is refused, never taken for another.
func TestFactsDamagedRecords(t *testing.T) {
	f := fileFacts{Off: 10, Len: 30, Objects: []objFact{{Schema: fbc.SchemaPackage, Name: "p", N: 10, Ref: &fbc.Ref{DefaultChannel: "s"}}, {Schema: "x", N: 20}}}
	rec := appendFacts(nil, &f)
	_, k := binary.Uvarint(rec)
	body := rec[k:]
	if _, err := decodeFacts(body); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(body); i++ {
		if _, err := decodeFacts(body[:i]); err == nil {
			t.Errorf("truncated to %d of %d bytes: accepted", i, len(body))
		}
	}
	for _, bad := range []fileFacts{
		{Off: 0, Len: 31, Objects: f.Objects},                             // lengths do not add up
		{Off: 0, Len: 0},                                                  // empty
		{Off: 0, Len: 10, Objects: []objFact{{N: 0}, {N: 10}}},            // an empty line
		{Off: -5, Len: 10, Objects: []objFact{{N: 10}}},                   // before the start
		{Off: 0, Len: 10, Objects: []objFact{{N: 11}, {N: -1, Ref: nil}}}, // longer than the file
	} {
		r := appendFacts(nil, &bad)
		_, k := binary.Uvarint(r)
		if _, err := decodeFacts(r[k:]); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := decodeFacts(append(bytes.Clone(body), 0)); err == nil {
		t.Error("a trailing byte accepted")
	}
}

// FuzzDecodeFacts: any bytes decode to an error or to facts that add up,
// and never panic or allocate beyond the input's size.
func FuzzDecodeFacts(f *testing.F) {
	f.Add(appendFacts(nil, &fileFacts{Off: 1, Len: 3, Objects: []objFact{{Schema: fbc.SchemaChannel, N: 3, Ref: &fbc.Ref{Entries: []fbc.ChannelEntry{{Name: "a", Skips: []string{"b"}}}}}}})[1:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeFacts(b)
		if err != nil {
			return
		}
		var total int64
		for _, o := range got.Objects {
			if o.N <= 0 {
				t.Fatalf("object of %d bytes", o.N)
			}
			total += o.N
		}
		if total != got.Len || got.Off < 0 {
			t.Fatalf("facts that do not add up: %+v", got)
		}
	})
}

// TestFactsFirstFileOneObject: the usual record, a file at the start of
// catalog.jsonl holding one object, decodes (a decoder refusing offset 0
// or an object as long as its file would silently lose reuse).
func TestFactsFirstFileOneObject(t *testing.T) {
	f := fileFacts{Off: 0, Len: 42, Shape: []byte(`{"format":1}`), Objects: []objFact{{Schema: fbc.SchemaPackage, Name: "p", N: 42, Ref: &fbc.Ref{DefaultChannel: "stable"}}}}
	rec := appendFacts(nil, &f)
	_, k := binary.Uvarint(rec)
	got, err := decodeFacts(rec[k:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &f) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, &f)
	}
}

// Equal strings of one record decode to one copy: the package name of
// every object, a bundle's name in the entries that list or replace it.
func TestFactsDecodeEqualStringsOnce(t *testing.T) {
	ch := &fbc.Ref{Entries: []fbc.ChannelEntry{{Name: "p.v2", Replaces: "p.v1"}, {Name: "p.v1"}}}
	b := &fbc.Ref{Image: "img", Packages: []fbc.PackageProperty{{PackageName: "p", Version: "1.0.0"}}}
	f := &fileFacts{Off: 0, Len: 3, Objects: []objFact{
		{Schema: fbc.SchemaChannel, Package: "p", Name: "stable", N: 1, Ref: ch},
		{Schema: fbc.SchemaBundle, Package: "p", Name: "p.v1", N: 1, Ref: b},
		{Schema: fbc.SchemaBundle, Package: "p", Name: "p.v2", N: 1, Ref: b},
	}}
	rec := appendFacts(nil, f)
	_, k := binary.Uvarint(rec)
	got, err := decodeFacts(rec[k:])
	if err != nil {
		t.Fatal(err)
	}
	o := got.Objects
	same := func(what, a, b string) {
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) { //nolint:gosec // G103: only compares where two strings' bytes live
			t.Errorf("%s: %q and %q are two copies", what, a, b)
		}
	}
	same("package", o[0].Package, o[2].Package)
	same("package property", o[1].Package, o[1].Ref.Packages[0].PackageName)
	same("schema", o[1].Schema, o[2].Schema)
	same("entry and bundle", o[0].Ref.Entries[1].Name, o[1].Name)
	same("replaces and bundle", o[0].Ref.Entries[0].Replaces, o[1].Name)
}
