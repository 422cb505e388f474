package graphql

import (
	"errors"
	"fmt"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/lexer"
	"github.com/graphql-go/graphql/language/source"
)

// Limits of this server beyond catalogd's, checked before the library
// parses (nesting) or validates (the rest) a query: its parser and its
// validation rules recurse over the document, and the overlapping-fields
// rule follows fragment spreads without end when fragments spread each
// other. Each check is one pass, linear in the query's size.
const (
	// MaxNesting bounds brackets, braces and parentheses open at once.
	MaxNesting = 32
	// MaxNodes bounds the document's nodes: selections, arguments,
	// values, directives, variables and definitions.
	MaxNodes = 4000
	// maxWrappers bounds the fragment spreads and inline fragments of the
	// document with every spread expanded.
	maxWrappers = 2000
)

// errRefused marks a query refused by this server's limits.
var errRefused = errors.New("query refused")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errRefused}, a...)...)
}

// checkNesting reads the query's tokens, without building anything, and
// refuses nesting beyond MaxNesting. A lexical error is left to the
// parser, which reports it as catalogd does.
func checkNesting(query string) error {
	lex := lexer.Lex(source.NewSource(&source.Source{Body: []byte(query)}))
	depth := 0
	for {
		tok, err := lex(0)
		if err != nil || tok.Kind == lexer.EOF {
			return nil
		}
		switch tok.Kind {
		case lexer.BRACE_L, lexer.BRACKET_L, lexer.PAREN_L:
			if depth++; depth > MaxNesting {
				return refuse("query exceeds maximum nesting of %d", MaxNesting)
			}
		case lexer.BRACE_R, lexer.BRACKET_R, lexer.PAREN_R:
			depth--
		}
	}
}

// counts are a selection set's fields, aliases and wrappers (spreads and
// inline fragments) with every spread expanded, and its depth counted as
// catalogd counts it (a fragment is a level).
type counts struct {
	fields, aliases, wrappers, depth int
}

func (c *counts) add(o counts) {
	c.fields = satAdd(c.fields, o.fields)
	c.aliases = satAdd(c.aliases, o.aliases)
	c.wrappers = satAdd(c.wrappers, o.wrappers)
}

// satAdd adds without overflow: a few spreads of spreads multiply.
func satAdd(a, b int) int { return min(a+b, 1<<40) }

func (c counts) check() error {
	switch {
	case c.depth > MaxDepth:
		return refuse("query exceeds maximum depth of %d", MaxDepth)
	case c.aliases > MaxAliases:
		return refuse("query exceeds maximum alias count of %d (fragment spreads counted as expanded)", MaxAliases)
	case c.fields > MaxFields:
		return refuse("query exceeds maximum field count of %d (fragment spreads counted as expanded)", MaxFields)
	case c.wrappers > maxWrappers:
		return refuse("query exceeds maximum of %d fragment spreads and inline fragments (expanded)", maxWrappers)
	}
	return nil
}

// docCheck is one pass over a parsed document: every fragment once
// (memoized), refusing cycles.
type docCheck struct {
	frags map[string]*ast.FragmentDefinition
	state map[string]int // 1 visiting, 2 done
	memo  map[string]counts
	nodes int
}

// checkDocument refuses fragment cycles, more than MaxNodes nodes, and
// any operation or fragment whose expanded counts exceed the limits.
func checkDocument(doc *ast.Document) error {
	d := &docCheck{frags: map[string]*ast.FragmentDefinition{}, state: map[string]int{}, memo: map[string]counts{}}
	for _, def := range doc.Definitions {
		if f, ok := def.(*ast.FragmentDefinition); ok && f.Name != nil {
			d.frags[f.Name.Value] = f
		}
	}
	d.nodes = len(doc.Definitions)
	for _, def := range doc.Definitions {
		var c counts
		var err error
		switch x := def.(type) {
		case *ast.OperationDefinition:
			d.nodes += len(x.VariableDefinitions)
			if err = d.directives(x.Directives); err == nil {
				c, err = d.selections(x.SelectionSet)
			}
		case *ast.FragmentDefinition:
			if x.Name != nil {
				c, err = d.fragment(x.Name.Value)
			}
		}
		if err == nil {
			err = c.check()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fragment returns the expanded counts of a fragment's selection set,
// computing them once.
func (d *docCheck) fragment(name string) (counts, error) {
	switch d.state[name] {
	case 2:
		return d.memo[name], nil
	case 1:
		return counts{}, refuse("cannot spread fragment %q within itself", name)
	}
	f := d.frags[name]
	if f == nil {
		return counts{}, nil // the library reports the unknown fragment
	}
	d.state[name] = 1
	if err := d.directives(f.Directives); err != nil {
		return counts{}, err
	}
	c, err := d.selections(f.SelectionSet)
	if err != nil {
		return counts{}, err
	}
	d.state[name] = 2
	d.memo[name] = c
	return c, nil
}

func (d *docCheck) selections(ss *ast.SelectionSet) (counts, error) {
	var c counts
	if ss == nil {
		return c, nil
	}
	for _, sel := range ss.Selections {
		if d.nodes++; d.nodes > MaxNodes {
			return c, refuse("query exceeds maximum node count of %d", MaxNodes)
		}
		s, err := d.selection(sel)
		if err != nil {
			return c, err
		}
		c.add(s)
		c.depth = max(c.depth, s.depth)
	}
	c.depth++
	return c, c.check()
}

// selection counts one selection, its depth that of what it holds.
func (d *docCheck) selection(sel ast.Selection) (counts, error) {
	var c, sub counts
	var err error
	switch s := sel.(type) {
	case *ast.Field:
		c.fields = 1
		if s.Alias != nil && s.Alias.Value != "" {
			c.aliases = 1
		}
		if err = d.arguments(s.Arguments); err == nil {
			if err = d.directives(s.Directives); err == nil {
				sub, err = d.selections(s.SelectionSet)
			}
		}
	case *ast.InlineFragment:
		c.wrappers = 1
		if err = d.directives(s.Directives); err == nil {
			sub, err = d.selections(s.SelectionSet)
		}
	case *ast.FragmentSpread:
		c.wrappers = 1
		if err = d.directives(s.Directives); err == nil && s.Name != nil {
			sub, err = d.fragment(s.Name.Value)
		}
	}
	c.add(sub)
	c.depth = sub.depth
	return c, err
}

func (d *docCheck) directives(ds []*ast.Directive) error {
	for _, x := range ds {
		if d.nodes++; d.nodes > MaxNodes {
			return refuse("query exceeds maximum node count of %d", MaxNodes)
		}
		if err := d.arguments(x.Arguments); err != nil {
			return err
		}
	}
	return nil
}

func (d *docCheck) arguments(args []*ast.Argument) error {
	for _, a := range args {
		if err := d.value(a.Value, 1); err != nil {
			return err
		}
	}
	return nil
}

// value counts a value's nodes; checkNesting already bounds its depth.
func (d *docCheck) value(v ast.Value, depth int) error {
	if d.nodes++; d.nodes > MaxNodes {
		return refuse("query exceeds maximum node count of %d", MaxNodes)
	}
	if depth > MaxNesting {
		return refuse("query exceeds maximum nesting of %d", MaxNesting)
	}
	switch x := v.(type) {
	case *ast.ListValue:
		for _, e := range x.Values {
			if err := d.value(e, depth+1); err != nil {
				return err
			}
		}
	case *ast.ObjectValue:
		for _, f := range x.Fields {
			if err := d.value(f.Value, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
