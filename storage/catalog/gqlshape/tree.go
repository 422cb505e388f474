package gqlshape

import "math"

// Value is one value of an object its producer has already parsed, so
// the shape is read from the parse instead of scanning the object's line
// again: that scan was about a seventh of a full sync's CPU. Object
// members have unique keys.
type Value[V any] interface {
	// Kind is the first byte of the value's JSON text, with every number
	// as '0' and false as 't': '"', '{', '[', 't', 'n' or '0'.
	Kind() byte
	// Float is a number's value.
	Float() float64
	// Len is an array's element count or an object's member count.
	Len() int
	// Elem is an array's element i.
	Elem(i int) V
	// Member is an object's member i: its key, unescaped, and its value.
	Member(i int) ([]byte, V)
}

// ObserveTree is Observe for an object given parsed as root and as its
// JSON line: the same shape, without decoding the line. Where the tree
// alone cannot give Observe's answer (two keys with one GraphQL name, a
// number out of JSON's range, a root that is not an object) it observes
// the line.
func ObserveTree[V Value[V]](s *Shape, schema string, root V, line []byte) {
	if schema == "" {
		return
	}
	sc := s.schema(schema)
	t := treeObserver[V]{s: s, sc: sc}
	if !t.observe(root) {
		s.observeLine(sc, line)
	}
}

// treeObserver is observeFast over a tree. It changes the shape only once
// the whole object is read: until then, what it would add waits in tops
// and adds, buffers the shape keeps between objects.
type treeObserver[V Value[V]] struct {
	s  *Shape
	sc *Schema
}

type treeTop struct {
	key        []byte
	name, typ  string
	list       bool
	sawObjects bool // an array holding objects: the field has Nested
}

// nestedAdd is a field of an object in the array of tops[top] that the
// shape lacks; top is -1 for one it has, listed for the duplicate check.
type nestedAdd struct {
	top  int
	name string
	f    Field
}

func (t treeObserver[V]) observe(root V) bool {
	if root.Kind() != '{' {
		return false
	}
	s := t.s
	s.tops, s.adds = s.tops[:0], s.adds[:0]
	for i := range root.Len() {
		key, v := root.Member(i)
		top := treeTop{key: key, name: s.fieldName(string(key))}
		for _, o := range s.tops {
			if o.name == top.name {
				return false
			}
		}
		if !t.value(&top, len(s.tops), v) {
			return false
		}
		s.tops = append(s.tops, top)
	}
	t.apply()
	return true
}

// value types a top-level value as topValue does.
func (t treeObserver[V]) value(top *treeTop, idx int, v V) bool {
	var ok bool
	if v.Kind() != '[' {
		top.typ, ok = treeScalar(v)
		return ok
	}
	top.list = true
	var have map[string]*Field
	if f := t.sc.Fields[top.name]; f != nil {
		have = f.Nested
	}
	var firstKind byte
	mixed := false
	for i := range min(v.Len(), maxSample) {
		e := v.Elem(i)
		k := e.Kind()
		if k == 'n' {
			continue
		}
		if firstKind == 0 {
			firstKind = k
		} else if k != firstKind {
			mixed = true
		}
		if k != '{' {
			typ, ok := treeScalar(e)
			if !ok {
				return false
			}
			if top.typ == "" {
				top.typ = typ
			}
			continue
		}
		if top.typ == "" {
			top.typ = String
		}
		top.sawObjects = true
		if !t.nested(idx, have, e) {
			return false
		}
	}
	if firstKind == 0 || mixed && !top.sawObjects {
		top.typ = String // no objects, so nothing was noted
	}
	return true
}

// nested notes the fields of an object in an array, typed as
// nestedObject types them, that have lacks.
func (t treeObserver[V]) nested(idx int, have map[string]*Field, o V) bool {
	s := t.s
	start := len(s.adds)
	for i := range o.Len() {
		key, v := o.Member(i)
		name := s.fieldName(string(key))
		for _, a := range s.adds[start:] {
			if a.name == name {
				return false
			}
		}
		if _, ok := have[name]; ok {
			s.adds = append(s.adds, nestedAdd{top: -1, name: name})
			continue
		}
		f := Field{Key: string(key), Type: String}
		e := v
		if v.Kind() == '[' {
			f.List = true
			if v.Len() == 0 {
				s.adds = append(s.adds, nestedAdd{top: idx, name: name, f: f})
				continue
			}
			e = v.Elem(0)
		}
		var ok bool
		if f.Type, ok = treeScalar(e); !ok {
			return false
		}
		s.adds = append(s.adds, nestedAdd{top: idx, name: name, f: f})
	}
	return true
}

// apply adds what observe noted, as observeFast does: a new field is
// added whole; a known one keeps its key and type and gains the nested
// fields it lacks, the first seen of a name winning.
func (t treeObserver[V]) apply() {
	s, sc := t.s, t.sc
	sc.Objects++
	for _, top := range s.tops {
		f := sc.Fields[top.name]
		if f == nil {
			f = &Field{Key: string(top.key), Type: top.typ, List: top.list}
			sc.Fields[top.name] = f
		}
		if top.sawObjects && f.Nested == nil {
			f.Nested = map[string]*Field{}
		}
	}
	for _, a := range s.adds {
		if a.top < 0 {
			continue
		}
		m := sc.Fields[s.tops[a.top].name].Nested
		if _, ok := m[a.name]; !ok {
			f := a.f
			m[a.name] = &f
		}
	}
	clear(s.tops)
	clear(s.adds)
}

// treeScalar is scalar for a parsed value; false for a number JSON
// cannot hold, which a line would not decode with.
func treeScalar[V Value[V]](v V) (string, bool) {
	switch v.Kind() {
	case 't':
		return Boolean, true
	case '0':
		x := v.Float()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		if x == float64(int64(x)) {
			return Int, true
		}
		return Float, true
	}
	return String, true
}
