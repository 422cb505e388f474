package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	gql "github.com/graphql-go/graphql"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/catalog/gqlshape"
)

// MaxLimit is the most objects one query field returns, and its default,
// as in catalogd.
const MaxLimit = 100

// loader reads one page of a schema's objects, optionally narrowed to a
// package or a name (answered from the index, not by paging).
type loader func(ctx context.Context, q catalog.Query, offset, limit int) ([]map[string]json.RawMessage, error)

// buildSchema makes the GraphQL schema catalogd derives from a catalog's
// shape: one list field per FBC schema, an object type per schema from the
// fields seen, nested object types for arrays of objects, and summary.
func buildSchema(sh *gqlshape.Shape, load loader) (gql.Schema, error) {
	names := make([]string, 0, len(sh.Schemas))
	for n := range sh.Schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	if err := checkCollisions(names); err != nil {
		return gql.Schema{}, err
	}
	fields := gql.Fields{}
	for _, n := range names {
		fields[gqlshape.QueryField(n)] = listField(n, objectType(n, sh.Schemas[n]), load)
	}
	fields["summary"] = summaryField(sh, names)
	return gql.NewSchema(gql.SchemaConfig{Query: gql.NewObject(gql.ObjectConfig{Name: "Query", Fields: fields})})
}

// checkCollisions refuses schemas that map to one type or field name, as
// catalogd does, rather than serving one of them under the other's name.
func checkCollisions(names []string) error {
	types, queries := map[string]string{}, map[string]string{}
	for _, n := range names {
		t := gqlshape.TypeName(n)
		if o, ok := types[t]; ok {
			return fmt.Errorf("type name collision: schemas %q and %q both sanitize to GraphQL type %q", o, n, t)
		}
		types[t] = n
	}
	for _, n := range names {
		q := gqlshape.QueryField(n)
		if o, ok := queries[q]; ok {
			return fmt.Errorf("query field collision: schemas %q and %q both map to field %q", o, n, q)
		}
		queries[q] = n
	}
	return nil
}

func listField(schema string, t *gql.Object, load loader) *gql.Field {
	return &gql.Field{
		Type: gql.NewList(t),
		Args: gql.FieldConfigArgument{
			"limit":  &gql.ArgumentConfig{Type: gql.Int, DefaultValue: MaxLimit, Description: "Maximum number of items to return"},
			"offset": &gql.ArgumentConfig{Type: gql.Int, DefaultValue: 0, Description: "Number of items to skip"},
			// Beyond catalogd: answered from the index directly.
			"package": &gql.ArgumentConfig{Type: gql.String, Description: "Only objects of this package"},
			"name":    &gql.ArgumentConfig{Type: gql.String, Description: "Only objects of this name"},
		},
		Resolve: func(p gql.ResolveParams) (any, error) {
			// catalogd's rules: out-of-range limits mean the maximum,
			// negative offsets none.
			limit, _ := p.Args["limit"].(int)
			if limit <= 0 || limit > MaxLimit {
				limit = MaxLimit
			}
			offset, _ := p.Args["offset"].(int)
			offset = max(offset, 0)
			q := catalog.Query{Schema: schema}
			q.Package, _ = p.Args["package"].(string)
			q.Name, _ = p.Args["name"].(string)
			objs, err := load(live(p.Context), q, offset, limit)
			if err != nil {
				return nil, fmt.Errorf("error loading objects for schema %s: %w", schema, err)
			}
			out := make([]any, len(objs))
			for i, o := range objs {
				out[i] = o
			}
			return out, nil
		},
	}
}

// objectType is the type of one schema's objects. Loaded objects are keyed
// by GraphQL field name (see byFieldName).
func objectType(schema string, sc *gqlshape.Schema) *gql.Object {
	fields := gql.Fields{}
	for name, f := range sc.Fields {
		if len(f.Nested) > 0 {
			nested := nestedType(gqlshape.TypeName(schema)+gqlshape.TypeName(name), f.Nested)
			fields[name] = &gql.Field{Type: gql.NewList(nested), Resolve: topResolver(name, false)}
			continue
		}
		fields[name] = &gql.Field{Type: scalar(f), Resolve: topResolver(name, true)}
	}
	return gql.NewObject(gql.ObjectConfig{Name: gqlshape.TypeName(schema), Fields: fields})
}

func nestedType(typeName string, nested map[string]*gqlshape.Field) *gql.Object {
	fields := gql.Fields{}
	for name, f := range nested {
		fields[name] = &gql.Field{Type: scalar(f), Resolve: nestedResolver(name)}
	}
	return gql.NewObject(gql.ObjectConfig{Name: typeName, Fields: fields})
}

func scalar(f *gqlshape.Field) gql.Output {
	var t gql.Output
	switch f.Type {
	case gqlshape.Int:
		t = gql.Int
	case gqlshape.Float:
		t = gql.Float
	case gqlshape.Boolean:
		t = gql.Boolean
	default:
		t = gql.String
	}
	if f.List {
		return gql.NewList(t)
	}
	return t
}

// topResolver reads a field of a loaded object, decoding only it;
// scalars get objects and arrays as JSON text, as catalogd declares them
// String.
func topResolver(name string, text bool) gql.FieldResolveFn {
	return func(p gql.ResolveParams) (any, error) {
		src, ok := p.Source.(map[string]json.RawMessage)
		if !ok || live(p.Context).Err() != nil {
			return nil, nil
		}
		raw, ok := src[name]
		if !ok {
			return nil, nil
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, nil
		}
		if text {
			return jsonText(v), nil
		}
		return v, nil
	}
}

// nestedResolver reads a field of an element of an array of objects: the
// raw JSON key first, then any key mapping to the name.
func nestedResolver(name string) gql.FieldResolveFn {
	return func(p gql.ResolveParams) (any, error) {
		src, ok := p.Source.(map[string]any)
		if !ok {
			return nil, nil
		}
		if v, ok := src[name]; ok {
			return jsonText(v), nil
		}
		for k, v := range src {
			if gqlshape.FieldName(k) == name {
				return jsonText(v), nil
			}
		}
		return nil, nil
	}
}

func jsonText(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		return string(b)
	}
	return v
}

// byFieldName splits an object line into its top-level values keyed by
// GraphQL field name, left undecoded: a query decodes only the fields it
// selects. A line that does not decode is skipped (nil), as catalogd's
// loader skips it.
func byFieldName(line []byte) map[string]json.RawMessage {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		out[gqlshape.FieldName(k)] = v
	}
	return out
}

// summaryField answers summary { totalSchemas schemas { name totalObjects
// totalFields } } from the shape alone.
func summaryField(sh *gqlshape.Shape, names []string) *gql.Field {
	schemaSummary := gql.NewObject(gql.ObjectConfig{Name: "SchemaSummary", Fields: gql.Fields{
		"name":         &gql.Field{Type: gql.String},
		"totalObjects": &gql.Field{Type: gql.Int},
		"totalFields":  &gql.Field{Type: gql.Int},
	}})
	return &gql.Field{
		Type: gql.NewObject(gql.ObjectConfig{Name: "CatalogSummary", Fields: gql.Fields{
			"totalSchemas": &gql.Field{Type: gql.Int},
			"schemas":      &gql.Field{Type: gql.NewList(schemaSummary)},
		}}),
		Resolve: func(gql.ResolveParams) (any, error) {
			schemas := make([]any, 0, len(names))
			for _, n := range names {
				sc := sh.Schemas[n]
				schemas = append(schemas, map[string]any{"name": n, "totalObjects": sc.Objects, "totalFields": len(sc.Fields)})
			}
			return map[string]any{"totalSchemas": len(names), "schemas": schemas}, nil
		},
	}
}
