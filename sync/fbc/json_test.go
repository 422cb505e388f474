package fbc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// jsonDocs are valid JSON values with whitespace in every place the
// grammar allows it, and every escape and literal.
var jsonDocs = []string{
	`{ "a" : 1 , "b" : [ 1 , 2 , { } , [ ] ] , "c" : "x" , "d" : true , "e" : false , "f" : null , "g" : -1.5e3 }`,
	"{\n\t\"schema\": \"olm.package\",\r\n\t\"name\": \"etcd\",\n\t\"nested\": {\"z\": [true, false, null], \"y\": {\"k\": []}}\n}\n",
	`{"s":"q\"b\\s\/f\bf\fn\nr\rt\tu\u0041\u00e9\ud83d\ude00 lone \ud800 end"}`,
	"{\"utf8\":\"\xc3\xa9 bad \xff\xfe\"}",
	`[ 0 , -0 , 12 , -3.25 , 1e2 , 1E+2 , 1e-2 , 0.5 , 123456789012 , 98.6 , -9 , 90e1 ]`,
	`  "just a string"  `,
	` 42 `, `true`, `false`, `null`, `[]`, `{}`, `[ [ [ ] ] ]`,
	`{"dup":1,"dup":2,"a":{"dup":[1],"dup":[2]}}`,
}

// badJSON are not JSON: each must be refused.
var badJSON = []string{
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `{,}`, `[,]`, `{"a":1 "b":2}`, `[1 2]`, `{1:2}`, `{"a"}`,
	`tru`, `nul`, `fals`, `trUe`, `nulx`, `-`, `01`, `1.`, `1e`, `1e+`, `.5`, `+1`, `-a`,
	`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", `"open`, `{"a":}`, `[`, `{`, `{"a":[1,2}`, `1e400`,
	`}`, `]`, `:`, `x`, ``, `   `,
}

// parseJSONValue runs jsonParser on doc as the streaming parser does:
// one value, then only white space.
func parseJSONValue(doc string) ([]byte, error) {
	var a arena
	a.reset()
	p := jsonParser{a: &a, src: []byte(doc)}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("trailing data at %d", p.pos)
	}
	return a.encode(nil, n), nil
}

// encodingJSON is what encoding/json makes of doc: the value re-encoded
// (sorted keys, no HTML escaping), or its error.
func encodingJSON(doc string) ([]byte, error) {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// container reports whether doc is an object or array: a strict prefix
// of one can only be cut short, while "1" is a whole prefix of "12".
func container(doc string) bool {
	d := strings.TrimLeft(doc, " \t\r\n")
	return d != "" && (d[0] == '{' || d[0] == '[')
}

// jsonParser agrees with encoding/json on every document, every prefix
// of a valid one and every invalid one; a valid object or array cut short
// anywhere is "unexpected end of JSON input". (encoding/json's own end of
// input errors are not compared: it judges a lone scalar, and the end of
// a number or escape, by appending a space.) The streaming parser retries
// failed JSON as YAML, which hides a JSON parser that fails on valid
// input: so this test calls it directly.
func TestJSONParserMatchesEncodingJSON(t *testing.T) {
	check := func(doc string) error {
		t.Helper()
		got, err := parseJSONValue(doc)
		want, werr := encodingJSON(doc)
		short := doc[:min(len(doc), 80)]
		switch {
		case (err == nil) != (werr == nil):
			t.Errorf("%q: ours %v, encoding/json %v", short, err, werr)
		case err == nil && !bytes.Equal(got, want):
			t.Errorf("%q:\n got %.200s\nwant %.200s", short, got, want)
		}
		return err
	}
	for _, doc := range jsonDocs {
		if _, err := encodingJSON(doc); err != nil {
			t.Fatalf("fixture %q is not JSON: %v", doc, err)
		}
		end := len(strings.TrimRight(doc, " \t\r\n"))
		for i := range len(doc) + 1 {
			err := check(doc[:i])
			if i < end && container(doc) && !errors.Is(err, errJSONEOF) {
				t.Errorf("%q cut short: %v, want %v", doc[:i], err, errJSONEOF)
			}
		}
	}
	// Nesting: encoding/json's limit is 10000 levels, and a value that
	// closed gives its level back, however many there are.
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	many := func(item string) string { return "[" + strings.Repeat(item+",", 12000) + item + "]" }
	for _, doc := range []string{deep(maxDepth), deep(maxDepth + 1), many("{}"), many(`{"a":1}`), many("[]"), many("[1]"), many(`{"a":[{}]}`)} {
		check(doc)
	}
	// A minus sign without digits is named as encoding/json names it.
	if _, err := parseJSONValue(`[-a]`); err == nil || !strings.Contains(err.Error(), "invalid character in numeric literal") {
		t.Errorf("[-a]: %v", err)
	}
	for _, doc := range badJSON {
		if _, err := parseJSONValue(doc); err == nil {
			t.Errorf("%q accepted", doc)
		}
		check(doc)
	}
}
