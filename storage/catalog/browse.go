package catalog

// Read helpers for browsing a catalog from its index alone: which objects
// exist, under which package and name, and how large their lines are,
// without reading catalog.jsonl.

// Object is one object as the index records it.
type Object struct {
	Schema, Package, Name string
	// Size is the byte length of its line, "\n" included.
	Size int64
}

// Objects calls fn for every object matching q, in catalog order, until fn
// returns false. It reads nothing from the store.
func (c *Catalog) Objects(q Query, fn func(Object) bool) {
	x := c.idx
	sid, sAny, sOK := x.lookup(q.Schema)
	pid, pAny, pOK := x.lookup(q.Package)
	nid, nAny, nOK := x.lookup(q.Name)
	if !sOK || !pOK || !nOK {
		return
	}
	x.once.Do(x.build)
	visit := func(i int) bool {
		e := &x.entries[i]
		if !sAny && e.schema != sid || !pAny && e.pkg != pid || !nAny && e.name != nid {
			return true
		}
		return fn(Object{Schema: x.strs[e.schema], Package: x.strs[e.pkg], Name: x.strs[e.name], Size: int64(e.n)})
	}
	// The shortest posting list of the fields asked for, as match does.
	var cand []int32
	all := true
	for f, a := range [3]struct {
		id  uint32
		any bool
	}{{sid, sAny}, {pid, pAny}, {nid, nAny}} {
		if a.any {
			continue
		}
		if l := x.postings[f][a.id]; all || len(l) < len(cand) {
			cand, all = l, false
		}
	}
	if all {
		for i := range x.entries {
			if !visit(i) {
				return
			}
		}
		return
	}
	for _, i := range cand {
		if !visit(int(i)) {
			return
		}
	}
}
