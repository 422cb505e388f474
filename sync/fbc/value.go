package fbc

// Value is one value of a parsed object (Object.Root): a view of the
// parser's tree, valid only while the object's fn runs. It reads as the
// JSON in Blob would decode, with object members in key order and keys
// unique.
type Value struct {
	a *arena
	n *node
}

// Kind is the first byte of the value's JSON text, with every number as
// '0' and false as 't': '"', '{', '[', 't', 'n' or '0'; 0 for the zero
// Value.
func (v Value) Kind() byte {
	if v.n == nil {
		return 0
	}
	switch v.n.kind {
	case kNull:
		return 'n'
	case kFalse, kTrue:
		return 't'
	case kNum:
		return '0'
	case kStr:
		return '"'
	case kArr:
		return '['
	}
	return '{'
}

// Float is a number's value.
func (v Value) Float() float64 { return v.n.f }

// Len is an array's element count or an object's member count.
func (v Value) Len() int {
	if v.n == nil || v.n.kind != kArr && v.n.kind != kObj {
		return 0
	}
	return int(v.n.n)
}

// Elem is an array's element i.
func (v Value) Elem(i int) Value { return Value{v.a, &v.a.nodes[int(v.n.off)+i]} }

// Member is an object's member i: its key, unescaped, and its value.
func (v Value) Member(i int) ([]byte, Value) {
	k := int(v.n.off) + 2*i
	return v.a.nodes[k].s, Value{v.a, &v.a.nodes[k+1]}
}
