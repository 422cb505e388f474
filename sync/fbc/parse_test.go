package fbc

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"malformed yaml", "schema: a\n---\nschema: b\n  bad: [\n", []string{"document 1 (line 3)", "yaml"}},
		{"after an empty document", "# nothing\n---\nschema: a\n---\nschema: b\n  bad: [\n", []string{"document 2 (line 5)"}},
		{"bad separator", "schema: a\n--- x\n", []string{"document 0: line 2: invalid Yaml document separator: x"}},
		{"malformed json", `{"schema":"a"}{"schema":"b"}{"schema":}`, []string{"document 2 (line 1)", "invalid character"}},
		{"malformed json on line 4", "{\"schema\":\"a\"}\n{\"schema\":\"b\"}\n\n{\"schema\":}", []string{"document 2 (line 4)"}},
		{"truncated json", `{"schema":"a"}{"schema":"b"}{"schema":"c"`, []string{"document 2", "unexpected end of JSON input"}},
		{"duplicate folded keys", "schema: a\nName: x\nnAme: y\n", []string{`duplicate keys for key "name"`}},
		{"schema not a string", "schema: [a]\n", []string{`expected value for key "schema" to be a string`}},
		{"nan", "schema: a\nv: .nan\n", []string{"unsupported value: NaN"}},
		{"huge line", "schema: a\nv: [" + strings.Repeat("x", 1<<20), []string{"document 0 (line 1)"}},
		{"deep json", `{"schema":"a","v":` + strings.Repeat("[", 20000), []string{"exceeded max depth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := Parse(strings.NewReader(tt.in), func(Object) error { n++; return nil })
			if err == nil {
				t.Fatalf("no error after %d objects", n)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseSchemaless: objects without a schema are passed on as catalogd
// stores them (an empty YAML document as nothing, a JSON null as "null");
// the Validator refuses them as opm does.
func TestParseSchemaless(t *testing.T) {
	for _, tt := range []struct{ name, in, blobs, msg string }{
		{"schemaless", "name: x\n", `{"name":"x"}` + "\n", `object '{"name":"x"}' is missing root schema field`},
		{"schemaless json", `{"schema":"a"}` + "\n" + `{"name":"x"}`, `{"schema":"a"}` + "\n" + `{"name":"x"}` + "\n", `object '{"name":"x"}'`},
		{"empty document", "schema: a\n---\n# nothing\n", `{"schema":"a"}` + "\n", "object '' is missing root schema field"},
		{"json null", `{"schema":"a"}` + "\nnull\n", `{"schema":"a"}` + "\nnull\n", "object 'null' is missing root schema field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var blobs strings.Builder
			v := NewValidator()
			if err := Parse(strings.NewReader(tt.in), func(o Object) error {
				blobs.Write(o.Blob)
				v.Add("c.yaml", o)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if blobs.String() != tt.blobs {
				t.Errorf("blobs %q, want %q", blobs.String(), tt.blobs)
			}
			err := v.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Rule != RuleSchemaMissing || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("validate: %v, want %s %q", err, RuleSchemaMissing, tt.msg)
			}
		})
	}
}

func TestParseCallbackAndReadErrors(t *testing.T) {
	stop := errors.New("stop")
	err := Parse(strings.NewReader("schema: a\n---\nschema: b\n"), func(Object) error { return stop })
	if err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	boom := errors.New("disk on fire")
	err = Parse(io.MultiReader(strings.NewReader("schema: a\n"), errReader{boom}), func(Object) error { return nil })
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalid) {
		t.Fatalf("read error: got %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestParseObjectFields(t *testing.T) {
	var got []Object
	in := "Schema: olm.bundle\nPACKAGE: p\nname: b\nimage: i\nproperties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]\n---\nschema: x.custom\nv: <&>\n"
	if err := Parse(strings.NewReader(in), func(o Object) error { got = append(got, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d objects", len(got))
	}
	b := got[0]
	if b.Schema != "olm.bundle" || b.Package != "p" || b.Name != "b" || b.Ref == nil || b.Ref.Image != "i" ||
		len(b.Ref.Packages) != 1 || b.Ref.Packages[0] != (PackageProperty{PackageName: "p", Version: "1.0.0"}) {
		t.Fatalf("bundle %+v ref %+v", b, b.Ref)
	}
	if want := `{"PACKAGE":"p","Schema":"olm.bundle","image":"i","name":"b","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}` + "\n"; string(b.Blob) != want {
		t.Fatalf("blob %s", b.Blob)
	}
	if got[1].Ref != nil || string(got[1].Blob) != `{"schema":"x.custom","v":"<&>"}`+"\n" {
		t.Fatalf("custom %+v", got[1])
	}
}

// TestParseConcurrent parses the same files from several goroutines (run
// with -race) and expects identical output.
func TestParseConcurrent(t *testing.T) {
	files := catalogFiles(t, "../../testdata/fbc/community-v4.21-3pkgs/configs")
	want := map[string]string{}
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = runFastString(t, data)
	}
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, f := range files {
				data, _ := readFile(f)
				if got := runFastString(t, data); got != want[f] {
					t.Errorf("%s: concurrent parse differs", f)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func runFastString(t *testing.T, data []byte) string {
	var b strings.Builder
	if err := Parse(strings.NewReader(string(data)), func(o Object) error {
		b.Write(o.Blob)
		return nil
	}); err != nil {
		t.Error(err)
	}
	return b.String()
}
