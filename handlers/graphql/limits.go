package graphql

import (
	"fmt"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"
)

// Query limits, catalogd's: a document is refused before it runs when it
// nests deeper, has more aliases or selects more fields than these.
const (
	MaxDepth   = 10
	MaxAliases = 50
	MaxFields  = 500
	// MaxQueryBytes is the longest query text accepted.
	MaxQueryBytes = 100000
	// MaxBodyBytes bounds the request body.
	MaxBodyBytes = 1 << 20
)

// parse parses the query as catalogd does.
func parse(query string) (*ast.Document, error) {
	doc, err := parser.Parse(parser.ParseParams{Source: query})
	if err != nil {
		return nil, fmt.Errorf("query parse error: %w", err)
	}
	return doc, nil
}

// checkComplexity walks every operation's selections, fragments expanded
// once per operation, counting as catalogd does so the same documents are
// refused with the same messages (checkDocument then counts every
// expansion).
func checkComplexity(doc *ast.Document) error {
	w := walker{frags: map[string]*ast.FragmentDefinition{}}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok {
			w.frags[f.Name.Value] = f
		}
	}
	for _, d := range doc.Definitions {
		op, ok := d.(*ast.OperationDefinition)
		if !ok {
			continue
		}
		w.seen = map[string]bool{}
		if err := w.walk(op.SelectionSet, 1); err != nil {
			return err
		}
	}
	return nil
}

// walker counts fields and aliases over the whole document.
type walker struct {
	frags           map[string]*ast.FragmentDefinition
	seen            map[string]bool
	fields, aliases int
}

func (w *walker) walk(ss *ast.SelectionSet, depth int) error {
	if ss == nil {
		return nil
	}
	if depth > MaxDepth {
		return fmt.Errorf("query exceeds maximum depth of %d", MaxDepth)
	}
	for _, sel := range ss.Selections {
		var next *ast.SelectionSet
		switch s := sel.(type) {
		case *ast.Field:
			if w.fields++; w.fields > MaxFields {
				return fmt.Errorf("query exceeds maximum field count of %d", MaxFields)
			}
			if s.Alias != nil && s.Alias.Value != "" {
				if w.aliases++; w.aliases > MaxAliases {
					return fmt.Errorf("query exceeds maximum alias count of %d", MaxAliases)
				}
			}
			next = s.SelectionSet
		case *ast.InlineFragment:
			next = s.SelectionSet
		case *ast.FragmentSpread:
			if w.seen[s.Name.Value] {
				continue
			}
			w.seen[s.Name.Value] = true
			if f := w.frags[s.Name.Value]; f != nil {
				next = f.SelectionSet
			}
		}
		if err := w.walk(next, depth+1); err != nil {
			return err
		}
	}
	return nil
}
