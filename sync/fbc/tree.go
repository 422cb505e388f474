package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/cases"

	"github.com/catalogsync/catalogsync/internal/asciiscan"
)

// The decoders (JSON, fast YAML, yaml.v2 fallback) all build the same small
// tree: a flat arena of nodes that holds exactly what encoding/json would
// have held in a map[string]any after operator-registry's round trip
// (numbers as float64, strings as valid UTF-8, object keys unique and
// sorted). One encoder then writes the blob.

type kind uint8

const (
	kNull kind = iota
	kFalse
	kTrue
	kNum
	kStr
	kArr
	kObj
)

type node struct {
	s    []byte  // kStr: valid UTF-8
	f    float64 // kNum
	off  int32   // kArr, kObj: index of the first child in arena.nodes
	n    int32   // kArr: elements; kObj: key/value pairs (2n nodes)
	kind kind
}

// maxDepth is encoding/json's nesting limit: operator-registry decodes every
// object with it, so deeper documents are errors there too.
const maxDepth = 10000

var errDepth = errors.New("exceeded max depth")

type arena struct {
	root  node // the object being emitted, see Value
	nodes []node
	stack []node // children of the containers being built
	strs  []byte // backing store for decoded strings
	tmp   []byte // scratch space, see scratch
	fold  []byte // folded top-level keys, see meta
	folds []int
	// ambiguous is set when operator-registry's output for this object
	// would depend on Go's random map order (distinct YAML keys that
	// stringify alike). The result is still valid; tests skip such inputs.
	ambiguous bool
	// used is the most nodes held since the parser's last release,
	// which clears only those: nodes are added by append and dropped
	// only here, so the rest are zero already.
	used int
}

func (a *arena) reset() {
	a.used = max(a.used, len(a.nodes))
	a.nodes = a.nodes[:0]
	a.stack = a.stack[:0]
	a.strs = a.strs[:0]
	a.ambiguous = false
}

// str returns a string node, replacing invalid UTF-8 the way encoding/json
// does (one U+FFFD per bad byte). b is copied only when it must change.
func (a *arena) str(b []byte) node {
	if !utf8.Valid(b) {
		b = a.sanitize(b)
	}
	return node{kind: kStr, s: b}
}

func (a *arena) sanitize(b []byte) []byte {
	start := len(a.strs)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			a.strs = append(a.strs, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			a.strs = append(a.strs, "\uFFFD"...)
		} else {
			a.strs = append(a.strs, b[i:i+size]...)
		}
		i += size
	}
	return a.strs[start:len(a.strs):len(a.strs)]
}

// scratch returns a reusable buffer of n bytes.
func (a *arena) scratch(n int) []byte {
	if cap(a.tmp) < n {
		a.tmp = make([]byte, n)
	}
	return a.tmp[:n]
}

// mark starts a container; its children are pushed on the stack.
func (a *arena) mark() int { return len(a.stack) }

func (a *arena) push(n node) { a.stack = append(a.stack, n) }

func (a *arena) endArr(mark int) node {
	off := len(a.nodes)
	a.nodes = append(a.nodes, a.stack[mark:]...)
	n := len(a.stack) - mark
	a.stack = a.stack[:mark]
	return node{kind: kArr, off: int32(off), n: int32(n)}
}

// endObj sorts the pairs pushed since mark by key, keeps the last of equal
// keys (as decoding into a map does) and moves them into the arena.
func (a *arena) endObj(mark int) node {
	kv := a.stack[mark:]
	sortPairs(kv)
	w := 0
	for r := 0; r < len(kv); r += 2 {
		if w > 0 && bytes.Equal(kv[w-2].s, kv[r].s) {
			w -= 2 // a later duplicate replaces the earlier one
		}
		kv[w], kv[w+1] = kv[r], kv[r+1]
		w += 2
	}
	off := len(a.nodes)
	a.nodes = append(a.nodes, kv[:w]...)
	a.stack = a.stack[:mark]
	return node{kind: kObj, off: int32(off), n: int32(w / 2)}
}

type pair struct{ k, v node }

// sortPairs stable-sorts key/value pairs by key. Catalog objects are small
// and usually already sorted, so insertion sort is the common case.
func sortPairs(kv []node) {
	n := len(kv) / 2
	sorted := true
	for i := 1; i < n; i++ {
		if bytes.Compare(kv[2*i-2].s, kv[2*i].s) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	if n <= 24 {
		for i := 1; i < n; i++ {
			k, v := kv[2*i], kv[2*i+1]
			j := i
			for ; j > 0 && bytes.Compare(kv[2*j-2].s, k.s) > 0; j-- {
				kv[2*j], kv[2*j+1] = kv[2*j-2], kv[2*j-1]
			}
			kv[2*j], kv[2*j+1] = k, v
		}
		return
	}
	ps := make([]pair, n)
	for i := range ps {
		ps[i] = pair{kv[2*i], kv[2*i+1]}
	}
	slices.SortStableFunc(ps, func(x, y pair) int { return bytes.Compare(x.k.s, y.k.s) })
	for i, p := range ps {
		kv[2*i], kv[2*i+1] = p.k, p.v
	}
}

func (a *arena) child(n node, i int) *node { return &a.nodes[int(n.off)+i] }

// meta checks the root the way declcfg.Meta.UnmarshalJSON does: top-level
// keys must stay distinct under Unicode case folding, and schema, package
// and name (matched case-insensitively) must be strings when present.
func (a *arena) meta(root node) (schema, pkg, name string, err error) {
	if root.kind != kObj {
		return "", "", "", nil
	}
	n := int(root.n)
	a.foldKeys(root, n)
	if err := a.duplicateKeys(root, n); err != nil {
		return "", "", "", err
	}
	for i := range n {
		var dst *string
		switch string(a.folded(i)) {
		case "schema":
			dst = &schema
		case "package":
			dst = &pkg
		case "name":
			dst = &name
		default:
			continue
		}
		v := a.child(root, 2*i+1)
		if v.kind != kStr {
			return "", "", "", fmt.Errorf("expected value for key %q to be a string, got %s", a.child(root, 2*i).s, v.kind)
		}
		*dst = string(v.s)
	}
	return schema, pkg, name, nil
}

// foldKeys folds the n keys of root into a.fold; a.folds holds the end
// offsets.
func (a *arena) foldKeys(root node, n int) {
	a.fold, a.folds = a.fold[:0], a.folds[:0]
	var caser *cases.Caser
	for i := range n {
		k := a.child(root, 2*i).s
		ascii := true
		for _, c := range k {
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
		}
		if ascii {
			for _, c := range k {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				a.fold = append(a.fold, c)
			}
		} else {
			if caser == nil {
				c := cases.Fold()
				caser = &c
			}
			a.fold = append(a.fold, caser.Bytes(k)...)
		}
		a.folds = append(a.folds, len(a.fold))
	}
}

// folded is key i as foldKeys folded it.
func (a *arena) folded(i int) []byte {
	start := 0
	if i > 0 {
		start = a.folds[i-1]
	}
	return a.fold[start:a.folds[i]]
}

// duplicateKeys reports every pair of the n keys of root that fold alike.
func (a *arena) duplicateKeys(root node, n int) error {
	var errs []error
	for i := range n {
		for j := i + 1; j < n; j++ {
			if bytes.Equal(a.folded(i), a.folded(j)) {
				errs = append(errs, fmt.Errorf("duplicate keys for key %q: [%s %s]", a.folded(i), a.child(root, 2*i).s, a.child(root, 2*j).s))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

func (k kind) String() string {
	switch k {
	case kNull:
		return "null"
	case kFalse, kTrue:
		return "bool"
	case kNum:
		return "number"
	case kStr:
		return "string"
	case kArr:
		return "array"
	}
	return "object"
}

// encode appends n as encoding/json's Encoder (SetEscapeHTML(false)) would
// write the equivalent map[string]any value.
func (a *arena) encode(b []byte, n node) []byte {
	switch n.kind {
	case kNull:
		return append(b, "null"...)
	case kFalse:
		return append(b, "false"...)
	case kTrue:
		return append(b, "true"...)
	case kNum:
		return appendFloat(b, n.f)
	case kStr:
		return appendString(b, n.s)
	case kArr:
		b = append(b, '[')
		for i := range int(n.n) {
			if i > 0 {
				b = append(b, ',')
			}
			b = a.encode(b, a.nodes[int(n.off)+i])
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i := range int(n.n) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a.nodes[int(n.off)+2*i].s)
			b = append(b, ':')
			b = a.encode(b, a.nodes[int(n.off)+2*i+1])
		}
		return append(b, '}')
	}
}

// appendFloat formats like encoding/json's float64 encoder (ES6 style).
func appendFloat(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && (f != 0 || !math.Signbit(f)) {
		// Integers below 2^53 print as their digits in both formats.
		return strconv.AppendInt(b, int64(f), 10)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString quotes valid UTF-8 s exactly as encoding/json does without
// HTML escaping: only '"', '\\', control characters, U+2028 and U+2029 are
// escaped.
func appendString(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i += asciiscan.JSONString(s[i:])
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
		if c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 3
			start = i
			continue
		}
		i++
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
