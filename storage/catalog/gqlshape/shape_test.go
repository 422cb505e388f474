package gqlshape

import (
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, field, typ, query string }{
		{"olm.bundle", "olmBundle", "OlmBundle", "olmbundles"},
		{"packageName", "packageName", "Packagename", "packagenames"},
		{"API_VERSION", "apiVersion", "ApiVersion", "apiversions"},
		{"skip-range", "skipRange", "SkipRange", "skipranges"},
		{"__x__y", "xY", "XY", "xys"},
		{"9lives", "field_9lives", "Lives", "9livess"},
		{"", "value", "Unknown", "s"},
		{"é.ok", "ok", "Ok", "oks"},
		{"URL.path", "urlPath", "UrlPath", "urlpaths"},
	} {
		if got := FieldName(tc.in); got != tc.field {
			t.Errorf("FieldName(%q) = %q, want %q", tc.in, got, tc.field)
		}
		if got := TypeName(tc.in); got != tc.typ {
			t.Errorf("TypeName(%q) = %q, want %q", tc.in, got, tc.typ)
		}
		if got := QueryField(tc.in); got != tc.query {
			t.Errorf("QueryField(%q) = %q, want %q", tc.in, got, tc.query)
		}
	}
}

func TestObserve(t *testing.T) {
	s := New()
	s.Observe("olm.bundle", []byte(`{"schema":"olm.bundle","n":1,"f":1.5,"b":true,"o":{"a":1},"props":[{"type":"x","value":{"k":1}},{"extra":[2]}],"mixed":[1,"a"],"empty":[],"nil":null}`))
	s.Observe("olm.bundle", []byte(`{"schema":"olm.bundle","n":"now a string","props":[{"late":false}]}`))
	s.Observe("", []byte(`{}`))
	s.Observe("bad", []byte(`{`))
	sc := s.Schemas["olm.bundle"]
	if sc.Objects != 2 || s.Schemas["bad"] == nil || s.Schemas["bad"].Objects != 0 || len(s.Schemas) != 2 {
		t.Fatalf("counts: %+v", s.Schemas)
	}
	want := map[string]Field{
		"n": {Type: Int}, "f": {Type: Float}, "b": {Type: Boolean}, "o": {Type: String},
		"mixed": {Type: String, List: true}, "empty": {Type: String, List: true}, "nil": {Type: String},
		"schema": {Type: String},
	}
	for k, w := range want {
		f := sc.Fields[k]
		if f == nil || f.Type != w.Type || f.List != w.List || f.Nested != nil {
			t.Errorf("%s = %+v, want %+v", k, f, w)
		}
	}
	p := sc.Fields["props"]
	if p == nil || !p.List || len(p.Nested) != 4 || p.Nested["value"].Type != String || !p.Nested["extra"].List || p.Nested["extra"].Type != Int || p.Nested["late"].Type != Boolean {
		t.Errorf("props = %+v", p)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b)
	if err != nil || len(back.Schemas["olm.bundle"].Fields) != len(sc.Fields) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := Unmarshal([]byte(`{"format":2,"schemas":{}}`)); err == nil {
		t.Error("format 2 accepted")
	}
}

// FuzzShape: no line crashes discovery, and no stored document crashes
// loading.
func FuzzShape(f *testing.F) {
	f.Add([]byte(`{"schema":"olm.bundle","properties":[{"type":"olm.package","value":{"packageName":"a"}}]}`))
	f.Add([]byte(`{"format":1,"schemas":{"a":{"objects":1,"fields":{}}}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New()
		s.Observe("x", b)
		if _, err := s.Marshal(); err != nil {
			t.Fatal(err)
		}
		Unmarshal(b)
	})
}

// same reports whether the fast path accepts line and gives what decoding
// gives; a line it refuses is fine (Observe decodes it).
func sameAsDecoded(t *testing.T, line []byte) {
	fast, slow := New(), New()
	fsc, ssc := &Schema{Fields: map[string]*Field{}}, &Schema{Fields: map[string]*Field{}}
	fast.Schemas["x"], slow.Schemas["x"] = fsc, ssc
	if !fast.observeFast(fsc, line) {
		if fsc.Objects != 0 || len(fsc.Fields) != 0 {
			t.Fatalf("refused %q but changed the shape", line)
		}
		return
	}
	slow.observeDecoded(ssc, line)
	a, _ := fast.Marshal()
	b, _ := slow.Marshal()
	if string(a) != string(b) {
		t.Fatalf("line %q:\nfast    %s\ndecoded %s", line, a, b)
	}
}

func TestFastMatchesDecoded(t *testing.T) {
	for _, l := range []string{
		`{"schema":"olm.bundle","n":1,"f":1.5,"b":true,"o":{"a":1},"props":[{"type":"x","value":{"k":1}},{"extra":[2]}],"mixed":[1,"a"],"empty":[],"nil":null}`,
		`{"a":[null,null],"b":[null,{"x":[null,1]}],"c":["s",{"y":1}],"d":[{"z":1},"s"],"e":[1,2,3,4,5,6,7,8,9,10,"late"]}`,
		`{"big":1e400}`, `{"a":{"b":1e400}}`, `{"a":1,"a":2}`, `{"A":1,"a":2}`, `{"a":[{"k":1,"k":2}]}`,
		`{"\u00e9":1}`, "{\"\xff\":1}", `{"s":"\x"}`, `null`, `[]`, `{"a":1} x`, `{"a":-0.0,"b":1e2,"c":-12.5e-3}`,
		`{"n":9007199254740993,"m":1e19}`, ` { "a" : [ { "b" : [ 1.5 ] } ] } `,
	} {
		sameAsDecoded(t, []byte(l))
	}
}

// FuzzFastMatchesDecoded: on any input the fast path agrees with decoding
// or declines.
func FuzzFastMatchesDecoded(f *testing.F) {
	f.Add([]byte(`{"schema":"olm.bundle","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}],"relatedImages":[{"image":"x","name":""}]}`))
	f.Add([]byte(`{"a":[1,"b",{"c":[2.5]}],"d":"\u0041\n"}`))
	f.Fuzz(func(t *testing.T, b []byte) { sameAsDecoded(t, b) })
}

func TestFastAcceptsCatalogLines(t *testing.T) {
	for _, l := range []string{
		`{"schema":"olm.bundle","n":1,"f":1.5,"b":true,"o":{"a":1},"props":[{"type":"x","value":{"k":1}},{"extra":[2]}],"mixed":[1,"a"],"empty":[],"nil":null}`,
		`{"a":[null,null],"b":[null,{"x":[null,1]}],"c":["s",{"y":1}],"d":[{"z":1},"s"],"e":[1,2,3,4,5,6,7,8,9,10,"late"]}`,
		`{"\u00e9":1,"s":"a\"b\\c\u0041"}`,
	} {
		s := New()
		sc := &Schema{Fields: map[string]*Field{}}
		if !s.observeFast(sc, []byte(l)) {
			t.Errorf("fast path declined %s", l)
		}
	}
}
