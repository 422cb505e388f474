package fbc

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// A shape describes a Go type operator-registry decodes a property value
// into, so that a value can be judged as encoding/json would judge it
// (null leaves anything unset, keys match fields case-insensitively,
// unknown keys are ignored, a value of another JSON type is an error,
// integers must fit) without building the value.
type shape struct {
	kind   shapeKind
	bits   int              // sInt
	elem   *shape           // sSlice, sMap
	fields map[string]shape // sStruct: JSON field names
	name   string           // Go type, for messages
}

type shapeKind uint8

const (
	sAny shapeKind = iota // json.RawMessage
	sString
	sBool
	sInt
	sBytes // []byte: base64 text, or an array of bytes
	sSlice
	sMap
	sStruct
)

var (
	shString = shape{kind: sString, name: "string"}
	shBool   = shape{kind: sBool, name: "bool"}
	shAny    = shape{kind: sAny}
	shBytes  = shape{kind: sBytes, name: "[]uint8"}
	shInt    = shape{kind: sInt, bits: 64, name: "int"}
	shInt32  = shape{kind: sInt, bits: 32, name: "int32"}
)

func sliceOf(s shape) shape { return shape{kind: sSlice, elem: &s, name: "[]" + s.name} }

func structOf(name string, fields ...any) shape {
	m := map[string]shape{}
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1].(shape)
	}
	return shape{kind: sStruct, fields: m, name: name}
}

func strFields(name string, keys ...string) shape {
	var f []any
	for _, k := range keys {
		f = append(f, k, shString)
	}
	return structOf(name, f...)
}

// propertyShapes are the value types of operator-registry's
// property.Parse; any other type only has to be JSON. Built at first use:
// a command that reads no catalog never needs them.
var propertyShapes = sync.OnceValue(func() map[string]shape {
	shDescriptor := structOf("v1alpha1.SpecDescriptor", "path", shString, "displayName", shString, "description", shString,
		"x-descriptors", sliceOf(shString), "value", shAny)
	shResource := strFields("v1alpha1.APIResourceReference", "name", "kind", "version")
	shCRD := structOf("v1alpha1.CRDDescription", "name", shString, "version", shString, "kind", shString,
		"displayName", shString, "description", shString, "resources", sliceOf(shResource),
		"statusDescriptors", sliceOf(shDescriptor), "specDescriptors", sliceOf(shDescriptor), "actionDescriptors", sliceOf(shDescriptor))
	shAPIService := structOf("v1alpha1.APIServiceDescription", "name", shString, "group", shString, "version", shString,
		"kind", shString, "deploymentName", shString, "containerPort", shInt32, "displayName", shString,
		"description", shString, "resources", sliceOf(shResource), "statusDescriptors", sliceOf(shDescriptor),
		"specDescriptors", sliceOf(shDescriptor), "actionDescriptors", sliceOf(shDescriptor))
	shLink := strFields("v1alpha1.AppLink", "name", "url")
	shLabels := shape{kind: sMap, elem: &shString, name: "map[string]string"}

	// shCSVMetadata is property.CSVMetadata (operator-framework/api
	// v1alpha1 types).
	shCSVMetadata := structOf("property.CSVMetadata",
		"annotations", shLabels,
		"apiServiceDefinitions", structOf("v1alpha1.APIServiceDefinitions", "owned", sliceOf(shAPIService), "required", sliceOf(shAPIService)),
		"crdDescriptions", structOf("v1alpha1.CustomResourceDefinitions", "owned", sliceOf(shCRD), "required", sliceOf(shCRD)),
		"description", shString, "displayName", shString,
		"installModes", sliceOf(structOf("v1alpha1.InstallMode", "type", shString, "supported", shBool)),
		"keywords", sliceOf(shString), "labels", shLabels, "links", sliceOf(shLink),
		"maintainers", sliceOf(strFields("v1alpha1.Maintainer", "name", "email")),
		"maturity", shString, "minKubeVersion", shString,
		"nativeAPIs", sliceOf(strFields("v1.GroupVersionKind", "group", "version", "kind")),
		"provider", shLink)

	return map[string]shape{
		"olm.package":          strFields("property.Package", "packageName", "version"),
		"olm.package.required": strFields("property.PackageRequired", "packageName", "versionRange"),
		"olm.gvk":              strFields("property.GVK", "group", "kind", "version"),
		"olm.gvk.required":     strFields("property.GVKRequired", "group", "kind", "version"),
		"olm.bundle.object":    structOf("property.BundleObject", "data", shBytes),
		"olm.csv.metadata":     shCSVMetadata,
		"olm.channel":          structOf("property.Channel", "channelName", shString, "priority", shInt),
	}
})

// field finds a struct field as encoding/json does: the exact name, else
// one equal under case folding.
func (s shape) field(key []byte) (shape, bool) {
	if f, ok := s.fields[string(key)]; ok {
		return f, true
	}
	for name, f := range s.fields {
		if is(key, name) {
			return f, true
		}
	}
	return shape{}, false
}

// check reports the first value encoding/json would refuse to decode into
// s, as "where: why"; "" when v decodes. The path is only built on
// failure: checking allocates nothing.
func (a *arena) check(v node, s shape, where string) string {
	path, msg := a.judge(v, s)
	if msg == "" {
		return ""
	}
	if where != "" || path != "" {
		return strings.TrimPrefix(where+path, ".") + ": " + msg
	}
	return msg
}

// judge is check's walk: on failure, the path below v (".key", "[i]")
// and why.
func (a *arena) judge(v node, s shape) (path, msg string) {
	if v.kind == kNull || s.kind == sAny {
		return "", ""
	}
	bad := func() (string, string) {
		return "", fmt.Sprintf("cannot unmarshal %s into Go value of type %s", v.kind, s.name)
	}
	switch s.kind {
	case sString:
		if v.kind != kStr {
			return bad()
		}
	case sBool:
		if v.kind != kTrue && v.kind != kFalse {
			return bad()
		}
	case sInt:
		if v.kind != kNum {
			return bad()
		}
		// The blob holds the number as encoding/json wrote the float64.
		var buf [32]byte
		text := appendFloat(buf[:0], v.f)
		if _, err := strconv.ParseInt(string(text), 10, s.bits); err != nil {
			return "", fmt.Sprintf("cannot unmarshal number %s into Go value of type %s", text, s.name)
		}
	case sBytes:
		_, m := a.bytesValue(v, "")
		return "", m
	case sSlice:
		if v.kind != kArr {
			return bad()
		}
		for i := range int(v.n) {
			if p, m := a.judge(*a.child(v, i), *s.elem); m != "" {
				return fmt.Sprintf("[%d]", i) + p, m
			}
		}
	case sMap, sStruct:
		if v.kind != kObj {
			return bad()
		}
		for i := range int(v.n) {
			key := a.child(v, 2*i).s
			var f shape
			ok := true
			if s.kind == sMap {
				f = *s.elem
			} else {
				f, ok = s.field(key)
			}
			if !ok {
				continue
			}
			if p, m := a.judge(*a.child(v, 2*i+1), f); m != "" {
				return "." + string(key) + p, m
			}
		}
	}
	return "", ""
}

// bytesValue decodes a []byte field: base64 text, or an array of numbers
// that fit a byte. The result is only valid until the next call.
func (a *arena) bytesValue(v node, where string) ([]byte, string) {
	switch v.kind {
	case kNull:
		return nil, ""
	case kStr:
		buf := a.scratch(base64.StdEncoding.DecodedLen(len(v.s)))
		n, err := base64.StdEncoding.Decode(buf, v.s)
		if err != nil {
			return nil, fmt.Sprintf("%s%v", prefix(where), err)
		}
		return buf[:n], ""
	case kArr:
		out := make([]byte, 0, v.n)
		for i := range int(v.n) {
			e := *a.child(v, i)
			if e.kind == kNull {
				out = append(out, 0)
				continue
			}
			if e.kind != kNum {
				return nil, fmt.Sprintf("%s[%d]: cannot unmarshal %s into Go value of type uint8", where, i, e.kind)
			}
			b, err := strconv.ParseUint(string(appendFloat(nil, e.f)), 10, 8)
			if err != nil {
				return nil, fmt.Sprintf("%s[%d]: cannot unmarshal number %s into Go value of type uint8", where, i, appendFloat(nil, e.f))
			}
			out = append(out, byte(b))
		}
		return out, ""
	}
	return nil, fmt.Sprintf("%scannot unmarshal %s into Go value of type []uint8", prefix(where), v.kind)
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}
