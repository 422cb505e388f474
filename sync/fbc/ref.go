package fbc

import (
	"bytes"
	"fmt"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Schemas the Validator knows.
const (
	SchemaPackage      = "olm.package"
	SchemaChannel      = "olm.channel"
	SchemaBundle       = "olm.bundle"
	SchemaDeprecations = "olm.deprecations"
)

// Ref is the part of a package, channel, bundle or deprecations object that
// validation needs. It never holds large data (bundle object payloads,
// icons, CSV metadata); those are only checked while parsing.
type Ref struct {
	// DefaultChannel of an olm.package.
	DefaultChannel string
	// Entries of an olm.channel.
	Entries []ChannelEntry
	// Image of an olm.bundle.
	Image string
	// Packages are the bundle's olm.package properties (one is valid).
	Packages []PackageProperty
	// HasObjects is set when the bundle has olm.bundle.object properties,
	// which stand in for an image. Their "ref" form (a file next to the
	// catalog) is accepted as is: it cannot be resolved from a reader.
	HasObjects bool
	// Deprecations are the entries of an olm.deprecations object.
	Deprecations []DeprecationEntry
	// Problems are type errors found when reading the object as its
	// schema, as operator-registry's typed decoding would report them.
	Problems []string
	// PropertyProblems are bundle property values operator-registry
	// cannot parse as their type says; ObjectProblems those of
	// olm.bundle.object, which it reads while loading, before anything
	// else is checked.
	PropertyProblems, ObjectProblems []string
}

// ChannelEntry is one entry of a channel's upgrade graph.
type ChannelEntry struct {
	Name, Replaces string
	Skips          []string
}

// PackageProperty is the value of an olm.package bundle property.
type PackageProperty struct {
	PackageName, Version string
}

// DeprecationEntry is one entry of an olm.deprecations object.
type DeprecationEntry struct {
	Schema, Name, Message string // Schema and Name form the reference
}

// at names a place in an object for messages; it is only formatted when
// there is a problem, so reading stays allocation-free.
type at struct {
	base  string
	i     int // element index, or -1
	field string
	typ   string // property type, for "property[i] of type t"
}

func (w at) String() string {
	if w.base == "property" {
		s := fmt.Sprintf("property[%d] of type %q", w.i, w.typ)
		if w.field != "" {
			s += " " + w.field
		}
		return s
	}
	s := w.base
	if w.i >= 0 {
		s += fmt.Sprintf("[%d]", w.i)
	}
	if w.field != "" && s != "" {
		s += "."
	}
	return s + w.field
}

func (w at) dot(field string) at { return at{w.base, w.i, field, w.typ} }

func field(f string) at { return at{"", -1, f, ""} }

// refReader decodes arena values with encoding/json's rules for the typed
// structs operator-registry uses: keys match fields case-insensitively,
// null leaves a field unset, a value of the wrong type is an error.
type refReader struct {
	a   *arena
	ref *Ref
}

func (r *refReader) problem(w at, format string, args ...any) {
	r.ref.Problems = append(r.ref.Problems, strings.TrimPrefix(w.String()+": ", ": ")+fmt.Sprintf(format, args...))
}

// fields calls fn for every key of obj, in key order; a non-object that is
// not null is a type error.
func (r *refReader) fields(v node, w at, fn func(key []byte, v node)) {
	switch v.kind {
	case kNull:
	case kObj:
		for i := range int(v.n) {
			fn(r.a.child(v, 2*i).s, *r.a.child(v, 2*i+1))
		}
	default:
		r.problem(w, "cannot unmarshal %s into an object", v.kind)
	}
}

func (r *refReader) elems(v node, w at, fn func(i int, v node)) {
	switch v.kind {
	case kNull:
	case kArr:
		for i := range int(v.n) {
			fn(i, *r.a.child(v, i))
		}
	default:
		r.problem(w, "cannot unmarshal %s into an array", v.kind)
	}
}

func (r *refReader) str(dst *string, v node, w at) {
	switch v.kind {
	case kNull:
	case kStr:
		if dst != nil {
			*dst = string(v.s)
		}
	default:
		r.problem(w, "cannot unmarshal %s into a string", v.kind)
	}
}

func (r *refReader) strs(dst *[]string, v node, w at) {
	var out []string
	r.elems(v, w, func(i int, e node) {
		var s string
		switch e.kind {
		case kStr:
			s = string(e.s)
		case kNull:
		default:
			r.problem(w, "element %d: cannot unmarshal %s into a string", i, e.kind)
		}
		out = append(out, s)
	})
	if v.kind == kArr {
		*dst = out
	}
}

// bytes checks a []byte field, which encoding/json reads as base64 text
// or as an array of byte values.
func (r *refReader) bytes(v node, w at) {
	if _, msg := r.a.bytesValue(v, ""); msg != "" {
		r.problem(w, "%s", msg)
	}
}

func is(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

// ref reads what validation needs from a known schema's root object.
func (a *arena) ref(root node, schema string) *Ref {
	r := &refReader{a: a, ref: &Ref{}}
	switch schema {
	case SchemaPackage:
		r.pkg(root, schema)
	case SchemaChannel:
		r.channel(root, schema)
	case SchemaBundle:
		r.bundle(root, schema)
	case SchemaDeprecations:
		r.deprecations(root, schema)
	default:
		return nil
	}
	return r.ref
}

func (r *refReader) pkg(root node, schema string) {
	r.fields(root, field(schema), func(k []byte, v node) {
		switch {
		case is(k, "schema"), is(k, "name"), is(k, "description"):
			r.str(nil, v, field(string(k)))
		case is(k, "defaultChannel"):
			r.str(&r.ref.DefaultChannel, v, field("defaultChannel"))
		case is(k, "icon"):
			r.fields(v, field("icon"), func(k []byte, v node) {
				switch {
				case is(k, "base64data"):
					r.bytes(v, field("icon.base64data"))
				case is(k, "mediatype"):
					r.str(nil, v, field("icon.mediatype"))
				}
			})
		case is(k, "properties"):
			r.properties(v, nil)
		}
	})
}

func (r *refReader) channel(root node, schema string) {
	r.fields(root, field(schema), func(k []byte, v node) {
		switch {
		case is(k, "schema"), is(k, "name"), is(k, "package"):
			r.str(nil, v, field(string(k)))
		case is(k, "entries"):
			r.ref.Entries = nil
			r.elems(v, field("entries"), r.channelEntry)
		case is(k, "properties"):
			r.properties(v, nil)
		}
	})
}

func (r *refReader) channelEntry(i int, e node) {
	var ce ChannelEntry
	w := at{"entries", i, "", ""}
	r.fields(e, w, func(k []byte, v node) {
		switch {
		case is(k, "name"):
			r.str(&ce.Name, v, w.dot("name"))
		case is(k, "replaces"):
			r.str(&ce.Replaces, v, w.dot("replaces"))
		case is(k, "skipRange"):
			r.str(nil, v, w.dot("skipRange"))
		case is(k, "skips"):
			r.strs(&ce.Skips, v, w.dot("skips"))
		}
	})
	r.ref.Entries = append(r.ref.Entries, ce)
}

func (r *refReader) bundle(root node, schema string) {
	r.fields(root, field(schema), func(k []byte, v node) {
		switch {
		case is(k, "schema"), is(k, "name"), is(k, "package"):
			r.str(nil, v, field(string(k)))
		case is(k, "image"):
			r.str(&r.ref.Image, v, field("image"))
		case is(k, "properties"):
			r.properties(v, r.ref)
		case is(k, "relatedImages"):
			r.elems(v, field("relatedImages"), func(i int, e node) {
				w := at{"relatedImages", i, "", ""}
				r.fields(e, w, func(k []byte, v node) {
					if is(k, "name") || is(k, "image") {
						r.str(nil, v, w.dot(string(k)))
					}
				})
			})
		}
	})
}

func (r *refReader) deprecations(root node, schema string) {
	r.fields(root, field(schema), func(k []byte, v node) {
		switch {
		case is(k, "schema"), is(k, "package"):
			r.str(nil, v, field(string(k)))
		case is(k, "entries"):
			r.ref.Deprecations = nil
			r.elems(v, field("entries"), r.deprecationEntry)
		}
	})
}

func (r *refReader) deprecationEntry(i int, e node) {
	var de DeprecationEntry
	w := at{"entries", i, "", ""}
	r.fields(e, w, func(k []byte, v node) {
		switch {
		case is(k, "message"):
			r.str(&de.Message, v, w.dot("message"))
		case is(k, "reference"):
			r.fields(v, w.dot("reference"), func(k []byte, v node) {
				switch {
				case is(k, "schema"):
					r.str(&de.Schema, v, w.dot("reference.schema"))
				case is(k, "name"):
					r.str(&de.Name, v, w.dot("reference.name"))
				}
			})
		}
	})
	r.ref.Deprecations = append(r.ref.Deprecations, de)
}

// properties reads a properties list. For bundles (ref != nil) it also
// judges the values as operator-registry does: olm.bundle.object data
// must be base64 of a YAML or JSON document (declcfg.LoadFS), and every
// value must decode into its type's Go struct (property.Parse).
func (r *refReader) properties(v node, ref *Ref) {
	r.elems(v, field("properties"), func(i int, e node) {
		w := at{"properties", i, "", ""}
		var typ string
		var value node
		hasValue := false
		r.fields(e, w, func(k []byte, v node) {
			switch {
			case is(k, "type"):
				r.str(&typ, v, w.dot("type"))
			case is(k, "value"):
				value, hasValue = v, true
			}
		})
		if ref == nil {
			return
		}
		if msg := r.propertyValue(ref, typ, value, hasValue); msg != "" {
			msg = at{"property", i, "", typ}.String() + ": " + msg
			if typ == "olm.bundle.object" {
				ref.ObjectProblems = append(ref.ObjectProblems, msg)
			} else {
				ref.PropertyProblems = append(ref.PropertyProblems, msg)
			}
		}
	})
}

func (r *refReader) propertyValue(ref *Ref, typ string, value node, hasValue bool) string {
	if typ == "olm.bundle.object" {
		ref.HasObjects = true
	}
	if !hasValue {
		return "unexpected end of JSON input"
	}
	s, ok := propertyShapes()[typ]
	if !ok {
		return ""
	}
	if msg := r.a.check(value, s, ""); msg != "" {
		return msg
	}
	switch typ {
	case "olm.package":
		var pp PackageProperty
		r.fields(value, at{}, func(k []byte, v node) {
			switch {
			case is(k, "packageName"):
				r.str(&pp.PackageName, v, at{})
			case is(k, "version"):
				r.str(&pp.Version, v, at{})
			}
		})
		ref.Packages = append(ref.Packages, pp)
	case "olm.bundle.object":
		var data []byte
		r.fields(value, at{}, func(k []byte, v node) {
			if is(k, "data") {
				data, _ = r.a.bytesValue(v, "")
			}
		})
		if _, err := utilyaml.ToJSON(data); err != nil {
			return "data: " + err.Error()
		}
	}
	return ""
}
