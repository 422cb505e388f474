package gqlshape

// Merge adds to s the shape o of objects that come after those s has
// seen, exactly as observing them one by one would: counts add up, a
// field s has keeps its key and type, and nested fields are added where
// s lacks them. o is copied, never shared.
func (s *Shape) Merge(o *Shape) {
	for name, osc := range o.Schemas {
		sc := s.schema(name)
		sc.Objects += osc.Objects
		for fname, of := range osc.Fields {
			f, ok := sc.Fields[fname]
			switch {
			case !ok:
				sc.Fields[fname] = of.clone()
			case of.Nested == nil:
			case f.Nested == nil:
				f.Nested = cloneFields(of.Nested)
			default:
				mergeFields(f.Nested, cloneFields(of.Nested))
			}
		}
	}
}

func (f *Field) clone() *Field {
	c := *f
	c.Nested = cloneFields(f.Nested)
	return &c
}

func cloneFields(fs map[string]*Field) map[string]*Field {
	if fs == nil {
		return nil
	}
	out := make(map[string]*Field, len(fs))
	for k, f := range fs {
		out[k] = f.clone()
	}
	return out
}
