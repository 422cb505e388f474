package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// decodeConfig decodes a config file strictly (unknown fields refused)
// and reports a mistake as FILE:LINE:COLUMN in YAML terms: the decoder
// speaks of JSON and Go types, so the mistake is found again on the
// YAML node tree.
func decodeConfig(path string, b []byte, c *Config) error {
	err := yaml.UnmarshalStrict(b, c)
	if err == nil {
		return nil
	}
	// The node tree only places a refused file's error: parsing it first
	// cost every start with --config a second YAML parse.
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s:%s", path, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "line "))
	}
	if n, msg := locate(&doc, reflect.TypeFor[Config](), ""); n != nil {
		return fmt.Errorf("%s:%d:%d: %s", path, n.Line, n.Column, msg)
	}
	return fmt.Errorf("%s: %s", path, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: "), "json: "))
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// locate returns the first node under n that t cannot hold, and why.
func locate(n *yamlv3.Node, t reflect.Type, at string) (*yamlv3.Node, string) {
	for n.Kind == yamlv3.DocumentNode || n.Kind == yamlv3.AliasNode {
		if n.Kind == yamlv3.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			return nil, ""
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Tag == "!!null" || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil, "" // its own decoder's business
	}
	name := at
	if name == "" {
		name = "the file"
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yamlv3.MappingNode {
			return n, fmt.Sprintf("%s: want a mapping, got %s", name, kindOf(n))
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fieldType(fields, k)
			if !ok {
				return n.Content[i], fmt.Sprintf("%s: unknown field %q (known: %s)", name, k, fieldNames(fields))
			}
			if bad, msg := locate(n.Content[i+1], ft, join(at, k)); bad != nil {
				return bad, msg
			}
		}
	case reflect.Map:
		if n.Kind != yamlv3.MappingNode {
			return n, fmt.Sprintf("%s: want a mapping, got %s", name, kindOf(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if bad, msg := locate(n.Content[i+1], t.Elem(), join(at, n.Content[i].Value)); bad != nil {
				return bad, msg
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, ""
		}
		if n.Kind != yamlv3.SequenceNode {
			return n, fmt.Sprintf("%s: want a list, got %s", name, kindOf(n))
		}
		for i, e := range n.Content {
			if bad, msg := locate(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); bad != nil {
				return bad, msg
			}
		}
	default:
		return scalar(n, t, name)
	}
	return nil, ""
}

// scalar checks a scalar the way the decoder converts it: any scalar
// makes a string; numbers and true/false need their YAML kinds.
func scalar(n *yamlv3.Node, t reflect.Type, name string) (*yamlv3.Node, string) {
	want, ok := "", true
	switch t.Kind() {
	case reflect.String:
		ok, want = n.Kind == yamlv3.ScalarNode, "a string"
	case reflect.Bool:
		ok, want = n.Tag == "!!bool", "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ok, want = n.Tag == "!!int", "an integer"
	case reflect.Float32, reflect.Float64:
		ok, want = n.Tag == "!!int" || n.Tag == "!!float", "a number"
	}
	if ok {
		return nil, ""
	}
	return n, fmt.Sprintf("%s: want %s, got %s", name, want, kindOf(n))
}

func kindOf(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping"
	case yamlv3.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	}
	return fmt.Sprintf("the string %q", truncateRunes(n.Value, 80))
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

type field struct {
	name string
	typ  reflect.Type
}

// jsonFields lists, in declaration order, the names the decoder accepts
// for t's fields (embedded structs' fields inline) and their types.
func jsonFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		case tag != "":
			out = append(out, field{tag, f.Type})
		default:
			out = append(out, field{f.Name, f.Type})
		}
	}
	return out
}

// fieldType finds k as the decoder does: exactly, else ignoring case.
func fieldType(fields []field, k string) (reflect.Type, bool) {
	for _, f := range fields {
		if f.name == k {
			return f.typ, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, k) {
			return f.typ, true
		}
	}
	return nil, false
}

func fieldNames(fields []field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}
