package oracle

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A value is *obj, arr, string, raw, bool, nil or json number text (num).
type (
	obj struct{ kvs []kv }
	kv  struct {
		k string
		v any
	}
	arr []any
	// raw is a scalar written as is: y in YAML, j in JSON ("" = write s
	// as a string there).
	raw struct{ y, j, s string }
	num string
)

func o(kvs ...any) *obj {
	m := &obj{}
	for i := 0; i+1 < len(kvs); i += 2 {
		m.kvs = append(m.kvs, kv{kvs[i].(string), kvs[i+1]})
	}
	return m
}

// set replaces k's value, or adds k.
func (m *obj) set(k string, v any) *obj {
	for i := range m.kvs {
		if m.kvs[i].k == k {
			m.kvs[i].v = v
			return m
		}
	}
	m.kvs = append(m.kvs, kv{k, v})
	return m
}

// doc is one document of a file; style seeds how it is written.
type doc struct {
	v     any
	json  bool
	style uint64
}

// file is one file of a case.
type file struct {
	path string
	docs []doc
	bom  bool
	crlf bool
	// sep is how YAML documents are separated (and whether the first
	// has a leading "---").
	sep int
}

type catalog struct{ files []file }

func (f file) bytes() []byte {
	var b strings.Builder
	if f.bom {
		b.WriteString("\ufeff")
	}
	for i, d := range f.docs {
		r := &renderer{rng: rand.New(rand.NewPCG(d.style, 7)), anchors: map[string]string{}}
		r.slash, r.yslash = r.one(10), r.one(30)
		if d.json {
			if i > 0 && !f.docs[i-1].json {
				b.WriteString("---\n")
			} else if i > 0 {
				b.WriteString([]string{"\n", "", " ", "\n\n"}[f.sep%4])
			}
			r.json(&b, d.v, 0, r.rng.IntN(3) == 0)
			b.WriteString("\n")
			continue
		}
		switch {
		case i > 0 || f.sep%3 == 1:
			b.WriteString("---")
			if f.sep%5 == 2 {
				b.WriteString(" # doc")
			}
			b.WriteString("\n")
		}
		r.yamlDoc(&b, d.v)
		if f.sep%7 == 3 {
			b.WriteString("...\n")
		}
	}
	s := b.String()
	if f.crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return []byte(s)
}

type renderer struct {
	rng     *rand.Rand
	anchors map[string]string // rendered flow text -> anchor name
	n       int
	slash   bool // escape '/' in JSON
	yslash  bool // and in YAML, which yaml.v2 refuses
}

func (r *renderer) one(n int) bool { return r.rng.IntN(n) == 0 }

// ---- JSON ----

func (r *renderer) json(b *strings.Builder, v any, ind int, pretty bool) {
	nl := func(i int) {
		if pretty {
			b.WriteString("\n" + strings.Repeat("  ", i))
		}
	}
	switch v := v.(type) {
	case *obj:
		b.WriteString("{")
		for i, e := range v.kvs {
			if i > 0 {
				b.WriteString(",")
			}
			nl(ind + 1)
			r.jsonString(b, e.k)
			b.WriteString(":")
			if pretty {
				b.WriteString(" ")
			}
			r.json(b, e.v, ind+1, pretty)
		}
		if len(v.kvs) > 0 {
			nl(ind)
		}
		b.WriteString("}")
	case arr:
		b.WriteString("[")
		for i, e := range v {
			if i > 0 {
				b.WriteString(",")
			}
			nl(ind + 1)
			r.json(b, e, ind+1, pretty)
		}
		if len(v) > 0 {
			nl(ind)
		}
		b.WriteString("]")
	case string:
		r.jsonString(b, v)
	case raw:
		if v.j != "" {
			b.WriteString(v.j)
		} else {
			r.jsonString(b, v.s)
		}
	case num:
		b.WriteString(string(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("json: %T", v))
	}
}

func (r *renderer) jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(b, "\\u%04x", c)
		case c == '/' && r.slash:
			b.WriteString("\\/")
		case c > 0xffff && r.slash:
			r1, r2 := utf16Pair(c)
			fmt.Fprintf(b, "\\u%04x\\u%04X", r1, r2)
		case (c == '<' || c == '&' || c > 0x7f) && r.one(3):
			fmt.Fprintf(b, "\\u%04x", c)
		case c == 'e' && r.one(40):
			b.WriteString("\\u0065")
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

func utf16Pair(c rune) (rune, rune) {
	c -= 0x10000
	return 0xd800 + (c>>10)&0x3ff, 0xdc00 + c&0x3ff
}

// ---- YAML ----

func (r *renderer) yamlDoc(b *strings.Builder, v any) {
	if r.one(12) {
		b.WriteString("# generated\n")
	}
	if m, ok := v.(*obj); ok && !r.one(15) {
		r.mapping(b, m, 0)
		return
	}
	b.WriteString(r.flow(v))
	b.WriteString("\n")
}

var plainSafe = regexp.MustCompile(`^[A-Za-z_./][A-Za-z0-9 _./+-]*[A-Za-z0-9_./+-]$|^[A-Za-z]$`)

// yaml11 are words yaml.v2 reads as something other than a string.
var yaml11 = regexp.MustCompile(`(?i)^(y|n|yes|no|on|off|true|false|null|~|\.inf|\.nan)$`)

func (r *renderer) scalar(s string, ind int, block bool) string {
	multi := strings.Contains(s, "\n")
	switch {
	case block && multi && r.one(2) && blockable(s):
		return r.blockScalar(s, ind)
	case plainSafe.MatchString(s) && !yaml11.MatchString(s) && !strings.Contains(s, " #") && !strings.Contains(s, ": ") && !r.one(4):
		return s
	case !multi && utf8.ValidString(s) && !strings.ContainsAny(s, "\t\r") && r.one(2):
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return r.doubleQuoted(s)
}

func blockable(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasSuffix(l, " ") || strings.ContainsAny(l, "\r\t") {
			return false
		}
	}
	return utf8.ValidString(s)
}

func (r *renderer) blockScalar(s string, ind int) string {
	pad := strings.Repeat("  ", ind+1)
	body := strings.TrimSuffix(s, "\n")
	ind1 := "|"
	switch {
	case strings.HasSuffix(s, "\n\n"):
		ind1 = "|+"
		body = strings.TrimRight(s, "\n")
		body += strings.Repeat("\n", strings.Count(s[len(strings.TrimRight(s, "\n")):], "\n")-1)
	case !strings.HasSuffix(s, "\n"):
		ind1 = "|-"
	}
	if r.one(4) && !strings.Contains(body, "\n\n") {
		// folded: single newlines fold to spaces, so double them.
		ind1 = ">" + ind1[1:]
		body = strings.ReplaceAll(body, "\n", "\n\n")
	}
	var out strings.Builder
	out.WriteString(ind1)
	for _, l := range strings.Split(body, "\n") {
		out.WriteString("\n")
		if l != "" {
			out.WriteString(pad + l)
		}
	}
	return out.String()
}

func (r *renderer) doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString([]string{`\t`, "\t", `\x09`}[r.rng.IntN(3)])
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		case c == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case c > 0x7f && r.one(3):
			if c > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, c)
			} else {
				fmt.Fprintf(&b, `\u%04X`, c)
			}
		case c == '/' && r.slash && r.yslash:
			b.WriteString(`\/`)
		case c == ' ' && r.one(20):
			b.WriteString(`\ `)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (r *renderer) yamlRaw(v raw) string {
	if v.y != "" {
		return v.y
	}
	return r.doubleQuoted(v.s)
}

// flow writes v on one line.
func (r *renderer) flow(v any) string {
	switch v := v.(type) {
	case *obj:
		var parts []string
		for _, e := range v.kvs {
			parts = append(parts, r.key(e.k)+": "+r.flowIn(e.v))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case arr:
		var parts []string
		for _, e := range v {
			parts = append(parts, r.flowIn(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		s := r.scalar(v, 0, false)
		if strings.ContainsAny(s[:1], "'\"") || !strings.ContainsAny(s, ",[]{}") {
			return s
		}
		return r.doubleQuoted(v)
	case raw:
		return r.yamlRaw(v)
	case num:
		return string(v)
	case bool:
		return []string{strconv.FormatBool(v), map[bool]string{true: "True", false: "FALSE"}[v]}[r.rng.IntN(2)]
	case nil:
		return []string{"null", "~", "Null"}[r.rng.IntN(3)]
	}
	panic(fmt.Sprintf("yaml: %T", v))
}

// flowIn is flow for a value inside a flow collection.
func (r *renderer) flowIn(v any) string {
	if s, ok := v.(string); ok {
		if plainSafe.MatchString(s) && !yaml11.MatchString(s) && !r.one(3) {
			return s
		}
		return r.doubleQuoted(s)
	}
	return r.flow(v)
}

func (r *renderer) key(k string) string {
	if plainSafe.MatchString(k) && !yaml11.MatchString(k) && !r.one(10) {
		return k
	}
	if r.one(2) && !strings.ContainsAny(k, "\n\t") {
		return "'" + strings.ReplaceAll(k, "'", "''") + "'"
	}
	return r.doubleQuoted(k)
}

// anchor returns "&aN " for a value worth anchoring, or an alias for one
// seen before.
func (r *renderer) anchorOrAlias(v any) (prefix string, alias bool) {
	switch v.(type) {
	case *obj, arr, string:
	default:
		return "", false
	}
	text := fmt.Sprintf("%#v", v)
	if name, ok := r.anchors[text]; ok && r.one(2) {
		return "*" + name, true
	}
	if r.one(10) {
		r.n++
		name := fmt.Sprintf("a%d", r.n)
		r.anchors[text] = name
		return "&" + name + " ", false
	}
	return "", false
}

func (r *renderer) mapping(b *strings.Builder, m *obj, ind int) {
	pad := strings.Repeat("  ", ind)
	if len(m.kvs) == 0 {
		b.WriteString(pad + "{}\n")
		return
	}
	for _, e := range m.kvs {
		b.WriteString(pad + r.key(e.k) + ":")
		r.value(b, e.v, ind)
		if r.one(30) {
			b.WriteString(pad + "# note\n")
		}
	}
}

// value writes v after "key:" or "-", ending the line(s).
func (r *renderer) value(b *strings.Builder, v any, ind int) {
	pre, alias := r.anchorOrAlias(v)
	if alias {
		b.WriteString(" " + pre + "\n")
		return
	}
	if pre != "" {
		b.WriteString(" " + strings.TrimSpace(pre))
	}
	switch x := v.(type) {
	case *obj:
		if len(x.kvs) > 0 && !r.one(6) {
			b.WriteString("\n")
			r.mapping(b, x, ind+1)
			return
		}
	case arr:
		if len(x) > 0 && !r.one(5) {
			b.WriteString("\n")
			// Sequences under a key may sit at the key's indentation.
			si := ind + 1
			if r.one(2) {
				si = ind
			}
			r.sequence(b, x, si)
			return
		}
	case string:
		b.WriteString(" " + r.scalar(x, ind, true) + "\n")
		return
	}
	b.WriteString(" " + r.flow(v) + "\n")
}

func (r *renderer) sequence(b *strings.Builder, a arr, ind int) {
	pad := strings.Repeat("  ", ind)
	for _, e := range a {
		if m, ok := e.(*obj); ok && len(m.kvs) > 0 && !r.one(5) {
			// "- key: v" then the rest of the mapping indented.
			var inner strings.Builder
			r.mapping(&inner, m, ind+1)
			s := inner.String()
			b.WriteString(pad + "- " + strings.TrimPrefix(s, pad+"  "))
			continue
		}
		b.WriteString(pad + "-")
		r.value(b, e, ind)
	}
}
