package oracle

import "strings"

// shrink drops files, documents, keys and elements while the difference
// of the same kind persists, a bounded number of tries.
func shrink(r *runner, c catalog, kind, diff, work string) (catalog, string) {
	budget := 400
	for improved := true; improved && budget > 0; {
		improved = false
		for _, cand := range candidates(c) {
			if budget--; budget < 0 {
				break
			}
			d, err := r.check(cand, work)
			if err != nil || !strings.HasPrefix(d, kind+":") {
				continue
			}
			c, diff, improved = cand, d, true
			break
		}
	}
	return c, diff
}

// candidates are c with one thing removed or simplified, smallest first.
func candidates(c catalog) []catalog {
	var out []catalog
	with := func(fi int, f file) catalog {
		n := catalog{files: append([]file(nil), c.files...)}
		n.files[fi] = f
		return n
	}
	for i := range c.files {
		if len(c.files) > 1 {
			out = append(out, catalog{files: append(append([]file(nil), c.files[:i]...), c.files[i+1:]...)})
		}
	}
	for fi, f := range c.files {
		for di := range f.docs {
			if len(f.docs) > 1 {
				g := f
				g.docs = append(append([]doc(nil), f.docs[:di]...), f.docs[di+1:]...)
				out = append(out, with(fi, g))
			}
		}
		if f.bom || f.crlf || f.sep != 0 {
			g := f
			g.bom, g.crlf, g.sep = false, false, 0
			out = append(out, with(fi, g))
		}
	}
	for fi, f := range c.files {
		for di, d := range f.docs {
			for _, v := range mutations(d.v) {
				g := f
				g.docs = append([]doc(nil), f.docs...)
				g.docs[di].v = v
				out = append(out, with(fi, g))
			}
			if d.style != 0 {
				g := f
				g.docs = append([]doc(nil), f.docs...)
				g.docs[di].style = 0
				out = append(out, with(fi, g))
			}
		}
	}
	return out
}

// mutations returns copies of v with one key or element removed, at any
// depth.
func mutations(v any) []any {
	var out []any
	switch v := v.(type) {
	case *obj:
		for i := range v.kvs {
			n := &obj{kvs: append(append([]kv(nil), v.kvs[:i]...), v.kvs[i+1:]...)}
			out = append(out, n)
		}
		for i, e := range v.kvs {
			for _, m := range mutations(e.v) {
				n := &obj{kvs: append([]kv(nil), v.kvs...)}
				n.kvs[i].v = m
				out = append(out, n)
			}
		}
	case arr:
		for i := range v {
			out = append(out, append(append(arr{}, v[:i]...), v[i+1:]...))
		}
		for i, e := range v {
			for _, m := range mutations(e) {
				n := append(arr{}, v...)
				n[i] = m
				out = append(out, n)
			}
		}
	case string:
		if len(v) > 1 && strings.ContainsAny(v, "\n\t \"'\\") {
			out = append(out, strings.Map(func(r rune) rune {
				if strings.ContainsRune("\n\t \"'\\", r) {
					return -1
				}
				return r
			}, v))
		}
	}
	return out
}
