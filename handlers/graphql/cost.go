package graphql

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	gql "github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
)

// The cost model: a query's worst-case answer in bytes, from the index
// alone. A page of k objects is bounded by the k largest lines of its
// schema; a field selected several times in one object (aliases) repeats
// its part of the line; a value served as JSON text, escaped, is at most
// textFactor times its bytes in the line. name, package and schema are
// bounded by the longest of them in the index.
const (
	textFactor = 2
	// keyBytes is what a response key costs beside its name: quotes,
	// colon, comma.
	keyBytes = 4
	// envelope is {"data":...} and an error the execution may add ("Must
	// provide an operation."), and fieldError one a root field may add.
	envelope   = 256
	fieldError = 256
)

// stats are what the cost model knows of one catalog.
type stats struct {
	lists map[string]*listStats // by query field (olmbundles)
	// summary and introspection: the bytes of summary's and of the full
	// introspection query's answers.
	summary, introspection int64
}

type listStats struct {
	// worst[k] is the bytes of the k largest lines (all of them for k
	// past the count).
	worst [MaxLimit + 1]int64
	// leaf bounds the answer of the fields the index holds (name,
	// package, schema), by GraphQL field name.
	leaf map[string]int64
}

// schemaLines are one schema's line sizes seen so far.
type schemaLines struct {
	sizes         []int64 // the largest, at most MaxLimit
	name, pkg, sc int64   // longest escaped values
}

// newStats reads the index once: the MaxLimit largest lines of each
// schema and the longest names and packages.
func newStats(c *catalog.Catalog, sh *gqlshape.Shape, schema gql.Schema) *stats {
	seen := map[string]*schemaLines{}
	c.Objects(catalog.Query{}, func(o catalog.Object) bool {
		l := seen[o.Schema]
		if l == nil {
			l = &schemaLines{sc: jsonLen(o.Schema)}
			seen[o.Schema] = l
		}
		l.name = max(l.name, jsonLen(o.Name))
		l.pkg = max(l.pkg, jsonLen(o.Package))
		if len(l.sizes) < MaxLimit {
			l.sizes = append(l.sizes, o.Size)
		} else if i := slices.Index(l.sizes, slices.Min(l.sizes)); o.Size > l.sizes[i] {
			l.sizes[i] = o.Size
		}
		return true
	})
	st := &stats{lists: map[string]*listStats{}}
	for n, sc := range sh.Schemas {
		ls := &listStats{leaf: map[string]int64{}}
		if l := seen[n]; l != nil {
			slices.SortFunc(l.sizes, func(a, b int64) int { return int(b - a) })
			for k := 1; k <= MaxLimit; k++ {
				ls.worst[k] = ls.worst[k-1]
				if k <= len(l.sizes) {
					ls.worst[k] += l.sizes[k-1]
				}
			}
			for name, f := range sc.Fields {
				if f.Type != gqlshape.String || f.List || f.Nested != nil {
					continue
				}
				switch f.Key {
				case "name":
					ls.leaf[name] = l.name
				case "package":
					ls.leaf[name] = l.pkg
				case "schema":
					ls.leaf[name] = l.sc
				}
			}
		}
		st.lists[gqlshape.QueryField(n)] = ls
		st.summary += int64(len(n))*2 + 80
	}
	st.summary += envelope
	st.introspection = answerBytes(schema, introspectionQuery)
	return st
}

// answerBytes runs a query, for its size.
func answerBytes(schema gql.Schema, q string) int64 {
	b, _ := json.Marshal(gql.Do(gql.Params{Schema: schema, RequestString: q}))
	return int64(len(b))
}

// jsonLen is the length of s as encoding/json writes it (HTML escaped).
func jsonLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError && size == 1:
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}

// estimate is the worst-case answer of every operation of doc, which
// checkDocument found acyclic and small.
func (st *stats) estimate(doc *ast.Document) int64 {
	e := estimator{st: st, frags: map[string]*ast.FragmentDefinition{}}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok && f.Name != nil {
			e.frags[f.Name.Value] = f
		}
	}
	total := int64(envelope)
	for _, d := range doc.Definitions {
		if op, ok := d.(*ast.OperationDefinition); ok {
			total = satAdd64(total, e.root(op.SelectionSet))
		}
	}
	return total
}

type estimator struct {
	st    *stats
	frags map[string]*ast.FragmentDefinition
}

// each calls fn for every field of ss, spreads and inline fragments
// expanded.
func (e *estimator) each(ss *ast.SelectionSet, fn func(*ast.Field)) {
	if ss == nil {
		return
	}
	for _, sel := range ss.Selections {
		switch s := sel.(type) {
		case *ast.Field:
			fn(s)
		case *ast.InlineFragment:
			e.each(s.SelectionSet, fn)
		case *ast.FragmentSpread:
			if f := e.frags[s.Name.Value]; f != nil {
				e.each(f.SelectionSet, fn)
			}
		}
	}
}

// root is the cost of the query type's selections.
func (e *estimator) root(ss *ast.SelectionSet) int64 {
	var total int64
	e.each(ss, func(f *ast.Field) {
		var c int64
		switch name := f.Name.Value; name {
		case "summary":
			c = e.st.summary * e.mult(f.SelectionSet)
		case "__schema", "__type":
			c = e.st.introspection * textFactor * e.mult(f.SelectionSet)
		default:
			if ls := e.st.lists[name]; ls != nil {
				c = e.list(ls, f)
			}
		}
		total = satAdd64(total, c+int64(len(responseKey(f))+keyBytes+fieldError))
	})
	return total
}

// list is the cost of a page: its lines, repeated as often as a field is,
// and each object's keys and index-held values.
func (e *estimator) list(ls *listStats, f *ast.Field) int64 {
	k := limitOf(f)
	sums := map[string]int64{}
	var fixed int64
	e.each(f.SelectionSet, func(s *ast.Field) {
		fixed += int64(len(responseKey(s)) + keyBytes)
		leaf, ok := ls.leaf[s.Name.Value]
		switch {
		case s.Name.Value == "__typename":
			fixed += 64
		case ok && s.SelectionSet == nil:
			fixed += leaf
		default:
			sums[s.Name.Value] = satAdd64(sums[s.Name.Value], e.mult(s.SelectionSet))
		}
	})
	var m int64
	for _, v := range sums {
		m = max(m, v)
	}
	return satAdd64(ls.worst[k]*textFactor*m, int64(k)*(fixed+keyBytes))
}

// mult is how many times a selection set repeats the most repeated part
// of its source: each field's sub-selections summed, the largest sum.
func (e *estimator) mult(ss *ast.SelectionSet) int64 {
	if ss == nil {
		return 1
	}
	sums := map[string]int64{}
	e.each(ss, func(s *ast.Field) {
		sums[s.Name.Value] = satAdd64(sums[s.Name.Value], e.mult(s.SelectionSet))
	})
	m := int64(1)
	for _, v := range sums {
		m = max(m, v)
	}
	return m
}

// limitOf is the objects a list field may return: its literal limit, as
// the resolver reads it, else MaxLimit.
func limitOf(f *ast.Field) int {
	for _, a := range f.Arguments {
		if a.Name == nil || a.Name.Value != "limit" {
			continue
		}
		if v, ok := a.Value.(*ast.IntValue); ok {
			if n, err := strconv.Atoi(v.Value); err == nil && n > 0 && n <= MaxLimit {
				return n
			}
		}
	}
	return MaxLimit
}

func responseKey(f *ast.Field) string {
	if f.Alias != nil && f.Alias.Value != "" {
		return f.Alias.Value
	}
	return f.Name.Value
}

func satAdd64(a, b int64) int64 {
	if a > 1<<60-b {
		return 1 << 60
	}
	return a + b
}

// introspectionQuery is the query GraphQL tools send for a schema.
const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name } types { ...FullType } directives { name description locations args { ...InputValue } } } } fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } } fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue } fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }`
