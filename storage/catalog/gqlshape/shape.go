// Package gqlshape discovers the shape of a catalog's objects as catalogd's
// GraphQL endpoint sees it: per FBC schema, the object count and the fields
// seen, each with a GraphQL name, a scalar type and, for arrays of objects,
// the fields of those objects. A sync feeds it every object, as its line or
// as the tree its parser built (ObserveTree), and stores the result beside
// the index, so a server builds the GraphQL schema without reading the
// catalog.
//
// The rules are catalogd's (operator-controller internal/catalogd/graphql),
// so the same catalog gives the same GraphQL schema: the first object that
// has a field decides its type, later objects only add nested fields;
// arrays are judged by their first ten elements, nested arrays by their
// first element; integral numbers are Int, others Float; objects and mixed
// arrays are String (served as JSON text).
package gqlshape

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Format is the version of the stored shape document.
const Format = 1

// ErrFormat is returned by Unmarshal for a document of another version.
var ErrFormat = errors.New("unsupported graphql shape format")

// GraphQL scalar type names a field may have.
const (
	Int     = "Int"
	Float   = "Float"
	Boolean = "Boolean"
	String  = "String"
)

// Field is one discovered field.
type Field struct {
	// Key is the JSON key the field was first seen under.
	Key  string `json:"key"`
	Type string `json:"type"`
	List bool   `json:"list,omitempty"`
	// Nested holds the fields of the objects of an array of objects, by
	// GraphQL name; nil otherwise.
	Nested map[string]*Field `json:"nested,omitempty"`
}

// Schema is what was seen of one FBC schema.
type Schema struct {
	Objects int               `json:"objects"`
	Fields  map[string]*Field `json:"fields"`
}

// Shape is a catalog's discovered shape. The zero value is not usable;
// call New.
type Shape struct {
	Format  int                `json:"format"`
	Schemas map[string]*Schema `json:"schemas"`

	names map[string]string // FieldName of keys seen, see fieldName
	tops  []treeTop         // ObserveTree's buffers
	adds  []nestedAdd
}

// New returns an empty shape.
func New() *Shape { return &Shape{Format: Format, Schemas: map[string]*Schema{}} }

// Observe adds one object, given its schema and its JSON line. Objects
// without a schema are not counted; a line that is not a JSON object
// leaves its schema listed but uncounted, as catalogd does.
func (s *Shape) Observe(schema string, line []byte) {
	if schema == "" {
		return
	}
	s.observeLine(s.schema(schema), line)
}

// observeLine adds one object to sc from its line: by the fast path, or
// by decoding where that declines.
func (s *Shape) observeLine(sc *Schema, line []byte) {
	if !s.observeFast(sc, line) {
		s.observeDecoded(sc, line)
	}
}

// schema returns what was seen of the named schema, listing it if new.
func (s *Shape) schema(name string) *Schema {
	sc := s.Schemas[name]
	if sc == nil {
		sc = &Schema{Fields: map[string]*Field{}}
		s.Schemas[name] = sc
	}
	return sc
}

// observeDecoded is Observe by decoding the line: the reference the fast
// path must agree with. Keys go in sorted order (see analyzeObject): of
// two keys with one GraphQL name, the first sorted is the field's.
func (s *Shape) observeDecoded(sc *Schema, line []byte) {
	var obj map[string]any
	if err := json.Unmarshal(line, &obj); err != nil {
		return
	}
	sc.Objects++
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		v := obj[key]
		name := FieldName(key)
		typ, list, nested := analyzeTop(v)
		f, ok := sc.Fields[name]
		if !ok {
			sc.Fields[name] = &Field{Key: key, Type: typ, List: list, Nested: nested}
			continue
		}
		if nested == nil {
			continue
		}
		if f.Nested == nil {
			f.Nested = nested
			continue
		}
		mergeFields(f.Nested, nested)
	}
}

// maxSample is how many array elements decide a top-level array's type.
const maxSample = 10

// analyzeTop types a top-level value: arrays are judged by their first
// maxSample non-null elements; arrays of objects get the union of those
// objects' fields.
func analyzeTop(v any) (typ string, list bool, nested map[string]*Field) {
	arr, ok := v.([]any)
	if !ok {
		return scalarType(v), false, nil
	}
	var first any
	mixed := false
	for _, e := range arr[:min(len(arr), maxSample)] {
		if e == nil {
			continue
		}
		if first == nil {
			first = e
		} else if kind(e) != kind(first) {
			mixed = true
		}
		if m, ok := e.(map[string]any); ok {
			fs := analyzeObject(m)
			if nested == nil {
				nested = fs
			} else {
				mergeFields(nested, fs)
			}
		}
	}
	if first == nil || mixed && nested == nil {
		return String, true, nil
	}
	return scalarType(first), true, nested
}

// analyzeObject types the fields of an object inside an array: nested
// arrays are judged by their first element alone. A later key mapping to
// the same name replaces an earlier one, as catalogd's does. catalogd
// takes keys in Go's random map order, so which of two such keys wins
// changes from run to run there; here keys go in sorted order, so the
// shape (stored, and compared between full and incremental syncs) is the
// same every time, and one catalogd could give.
func analyzeObject(m map[string]any) map[string]*Field {
	fs := make(map[string]*Field, len(m))
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		f := &Field{Key: key}
		if arr, ok := v.([]any); ok {
			f.List = true
			var first any
			if len(arr) > 0 {
				first = arr[0]
			}
			f.Type = scalarType(first)
		} else {
			f.Type = scalarType(v)
		}
		fs[FieldName(key)] = f
	}
	return fs
}

// mergeFields adds the fields of add that into lacks; present ones stay.
func mergeFields(into, add map[string]*Field) {
	for k, f := range add {
		if _, ok := into[k]; !ok {
			into[k] = f
		}
	}
}

// kind classifies a decoded JSON value as Go's reflect kinds would.
func kind(v any) int {
	switch v.(type) {
	case string:
		return 1
	case bool:
		return 2
	case float64:
		return 3
	case map[string]any:
		return 4
	case []any:
		return 5
	}
	return 0
}

func scalarType(v any) string {
	switch x := v.(type) {
	case bool:
		return Boolean
	case float64:
		// catalogd's test: the value survives a round trip through int64.
		if !math.IsNaN(x) && x == float64(int64(x)) {
			return Int
		}
		return Float
	}
	return String
}

// Marshal encodes the shape for storage.
func (s *Shape) Marshal() ([]byte, error) { return json.Marshal(s) }

// maxDoc bounds a stored shape document a reader accepts.
const maxDoc = 64 << 20

// Unmarshal decodes a stored shape.
func Unmarshal(b []byte) (*Shape, error) {
	if len(b) > maxDoc {
		return nil, fmt.Errorf("gqlshape: document of %d bytes: too large", len(b))
	}
	var s Shape
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("gqlshape: %w", err)
	}
	if s.Format != Format {
		return nil, fmt.Errorf("gqlshape: format %d: %w", s.Format, ErrFormat)
	}
	if s.Schemas == nil {
		s.Schemas = map[string]*Schema{}
	}
	for _, sc := range s.Schemas {
		if sc == nil || sc.Fields == nil {
			return nil, fmt.Errorf("gqlshape: schema without fields: %w", ErrFormat)
		}
	}
	return &s, nil
}

// FieldName maps a JSON key to catalogd's GraphQL field name: characters
// other than ASCII letters, digits and "_" split words, which are joined
// in camelCase (an all-upper-case first word is lower-cased whole); a name
// not starting with a letter gets the prefix "field_"; "" is "value".
func FieldName(key string) string {
	if key == "" {
		return "value"
	}
	var b strings.Builder
	first := true
	for _, w := range words(key) {
		if first {
			if strings.ToUpper(w) == w {
				b.WriteString(strings.ToLower(w))
			} else {
				b.WriteString(strings.ToLower(w[:1]) + w[1:])
			}
			first = false
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
	}
	out := b.String()
	if out == "" || !isLetter(out[0]) {
		out = "field_" + out
	}
	return out
}

// TypeName maps a schema or field name to catalogd's GraphQL type name:
// characters other than ASCII letters and digits split words, leading
// digits are dropped, each word is capitalised; "" is "Unknown".
func TypeName(s string) string {
	var clean strings.Builder
	for _, r := range s {
		if !isAlnum(r) {
			clean.WriteByte('_')
			continue
		}
		clean.WriteRune(r)
	}
	c := strings.TrimLeft(clean.String(), "0123456789")
	var b strings.Builder
	for _, w := range strings.Split(c, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
		}
	}
	if b.Len() == 0 {
		return "Unknown"
	}
	return b.String()
}

// QueryField is the root query field of a schema: its letters and digits,
// lower-cased, plus "s" ("olm.bundle" -> "olmbundles").
func QueryField(schema string) string {
	var b strings.Builder
	for _, r := range schema {
		if isAlnum(r) {
			b.WriteRune(r)
		}
	}
	return strings.ToLower(b.String()) + "s"
}

// words splits s on every character that is not an ASCII letter or
// digit, dropping empty words.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !isAlnum(r) })
}

func isAlnum(r rune) bool {
	return r < utf8.RuneSelf && (isLetter(byte(r)) || '0' <= r && r <= '9')
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
