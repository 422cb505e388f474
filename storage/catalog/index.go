package catalog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
)

// The index is a small binary file, so a reader can load it on cold start
// without parsing the catalog: for 15k objects it is about as large as
// their names and loads in well under a millisecond (see
// BenchmarkIndexLoad). All integers are little-endian.
//
//	offset  size  field
//	0       8     magic "CSYNCIDX"
//	8       4     format version, uint32 (this is version 1)
//	12      4     S: number of strings, uint32
//	16      4     N: number of objects, uint32
//	20      4     reserved, zero
//	24      8     size of catalog.jsonl in bytes, uint64
//	32      ...   S strings, strictly ascending bytewise, the first being
//	              "": each a uvarint byte length then the bytes
//	...     ...   N objects in catalog order, each four uvarints: string id
//	              of its schema, of its package, of its name (0 = none),
//	              and its line's length in bytes including the "\n"
//	end-4   4     CRC-32C (Castagnoli) of every byte before it, uint32
//
// Offsets are implicit: lines are contiguous, object i starts where i-1
// ends, and the lengths must add up to the size in the header. Sorted
// strings let a query find an id by binary search, with no map to build at
// load. A reader refuses versions it does not know (ErrFormat); a future
// version bumps the number rather than reinterpreting fields.
const (
	indexMagic   = "CSYNCIDX"
	indexVersion = 1
	indexHeader  = 32
	// maxLine bounds one object's line; the loaded index keeps lengths
	// in 32 bits.
	maxLine = 1<<32 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// object is one catalog line as the writer records it: string ids in its
// own intern table, and the line length.
type object struct {
	schema, pkg, name uint32
	n                 int64
}

// encodeIndex serializes objects whose ids index strs (any order, unique,
// containing "").
func encodeIndex(strs []string, objs []object, size int64) []byte {
	// Renumber ids into sorted string order.
	order := make([]uint32, len(strs))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmpString(strs[a], strs[b]) })
	newID := make([]uint32, len(strs))
	for rank, old := range order {
		newID[old] = uint32(rank)
	}
	total := indexHeader + 4
	for _, s := range strs {
		total += binary.MaxVarintLen32 + len(s)
	}
	total += len(objs) * 4 * binary.MaxVarintLen32
	b := make([]byte, indexHeader, total)
	copy(b, indexMagic)
	binary.LittleEndian.PutUint32(b[8:], indexVersion)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(strs)))
	binary.LittleEndian.PutUint32(b[16:], uint32(len(objs)))
	binary.LittleEndian.PutUint64(b[24:], uint64(size))
	for _, old := range order {
		b = binary.AppendUvarint(b, uint64(len(strs[old])))
		b = append(b, strs[old]...)
	}
	for _, o := range objs {
		b = binary.AppendUvarint(b, uint64(newID[o.schema]))
		b = binary.AppendUvarint(b, uint64(newID[o.pkg]))
		b = binary.AppendUvarint(b, uint64(newID[o.name]))
		b = binary.AppendUvarint(b, uint64(o.n))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// entry is one object of a loaded index: 16 bytes, its offset implied by
// the lengths before it (every scan is sequential anyway).
type entry struct {
	schema, pkg, name, n uint32
}

// index is a loaded, immutable index.
type index struct {
	strs    []string
	entries []entry
	size    int64

	// Built on first query: where each entry starts, and for each string
	// id the entries whose schema, package or name it is, so a query
	// costs its matches, not the catalog's size.
	once     sync.Once
	offs     []int64
	postings [3][][]int32 // by field (schema, package, name), then string id
}

func (x *index) build() {
	x.offs = make([]int64, len(x.entries))
	var off int64
	counts := [3][]int32{make([]int32, len(x.strs)), make([]int32, len(x.strs)), make([]int32, len(x.strs))}
	for i, e := range x.entries {
		x.offs[i] = off
		off += int64(e.n)
		counts[0][e.schema]++
		counts[1][e.pkg]++
		counts[2][e.name]++
	}
	for f := range x.postings {
		// One backing array per field: three allocations in all.
		all := make([]int32, len(x.entries))
		x.postings[f] = make([][]int32, len(x.strs))
		var at int32
		for id, n := range counts[f] {
			x.postings[f][id] = all[at : at : at+n]
			at += n
		}
	}
	for i, e := range x.entries {
		for f, id := range [3]uint32{e.schema, e.pkg, e.name} {
			x.postings[f][id] = append(x.postings[f][id], int32(i))
		}
	}
}

// parseIndex loads an index, checking everything a corrupt or truncated
// file could get wrong, so queries never read outside catalog.jsonl.
func parseIndex(b []byte) (*index, error) {
	if len(b) < indexHeader+4 || string(b[:8]) != indexMagic {
		return nil, fmt.Errorf("catalog: index: not an index: %w", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != indexVersion {
		return nil, fmt.Errorf("catalog: index version %d (want %d): %w", v, indexVersion, ErrFormat)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("catalog: index: checksum mismatch: %w", ErrCorrupt)
	}
	nstr := binary.LittleEndian.Uint32(b[12:])
	nobj := binary.LittleEndian.Uint32(b[16:])
	size := binary.LittleEndian.Uint64(b[24:])
	// Each string and object takes at least one byte per field, which
	// bounds the allocations below by the file size.
	if uint64(nstr)+4*uint64(nobj) > uint64(len(body)-indexHeader) || nstr == 0 || size > 1<<62 {
		return nil, fmt.Errorf("catalog: index: counts exceed file: %w", ErrCorrupt)
	}
	// One string conversion for the whole table; names are substrings of
	// it, so loading costs one allocation instead of one per name.
	all := string(body[indexHeader:])
	pos := 0
	uvarint := func() (uint64, bool) {
		v, n := uvarintString(all[pos:])
		if n <= 0 {
			return 0, false
		}
		pos += n
		return v, true
	}
	idx := &index{strs: make([]string, nstr), entries: make([]entry, nobj), size: int64(size)}
	for i := range idx.strs {
		l, ok := uvarint()
		if !ok || l > uint64(len(all)-pos) {
			return nil, fmt.Errorf("catalog: index: string %d: %w", i, ErrCorrupt)
		}
		idx.strs[i] = all[pos : pos+int(l)]
		pos += int(l)
		if i > 0 && idx.strs[i-1] >= idx.strs[i] || i == 0 && idx.strs[0] != "" {
			return nil, fmt.Errorf("catalog: index: strings not sorted: %w", ErrCorrupt)
		}
	}
	var off int64
	for i := range idx.entries {
		var f [4]uint64
		for j := range f {
			v, ok := uvarint()
			if !ok {
				return nil, fmt.Errorf("catalog: index: object %d: %w", i, ErrCorrupt)
			}
			f[j] = v
		}
		if f[0] >= uint64(nstr) || f[1] >= uint64(nstr) || f[2] >= uint64(nstr) ||
			f[3] == 0 || f[3] > maxLine || f[3] > size-uint64(off) {
			return nil, fmt.Errorf("catalog: index: object %d out of range: %w", i, ErrCorrupt)
		}
		idx.entries[i] = entry{schema: uint32(f[0]), pkg: uint32(f[1]), name: uint32(f[2]), n: uint32(f[3])}
		off += int64(f[3])
	}
	if pos != len(all) || off != int64(size) {
		return nil, fmt.Errorf("catalog: index: lengths add up to %d of %d bytes: %w", off, size, ErrCorrupt)
	}
	return idx, nil
}

// uvarintString is binary.Uvarint over a string, to decode from the one
// converted string without slicing back to bytes.
func uvarintString(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1)
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// lookup returns the id of s; "" (no filter) is reported as found with
// ok and any = true.
func (x *index) lookup(s string) (id uint32, any, ok bool) {
	if s == "" {
		return 0, true, true
	}
	i, found := slices.BinarySearch(x.strs, s)
	return uint32(i), false, found
}

// span is a byte range of catalog.jsonl.
type span struct{ off, n int64 }

// match returns the byte ranges of the objects matching q, in catalog
// order, adjacent ones merged, and the number of objects.
func (x *index) match(q Query) (spans []span, objects int) {
	sid, sAny, sOK := x.lookup(q.Schema)
	pid, pAny, pOK := x.lookup(q.Package)
	nid, nAny, nOK := x.lookup(q.Name)
	if !sOK || !pOK || !nOK {
		return nil, 0
	}
	x.once.Do(x.build)
	// Walk the shortest posting list of the fields asked for; with none,
	// every entry.
	var cand []int32
	all := true
	for f, c := range [3]struct {
		id  uint32
		any bool
	}{{sid, sAny}, {pid, pAny}, {nid, nAny}} {
		if c.any {
			continue
		}
		if l := x.postings[f][c.id]; all || len(l) < len(cand) {
			cand, all = l, false
		}
	}
	n := len(cand)
	if all {
		n = len(x.entries)
	}
	for k := 0; k < n; k++ {
		i := k
		if !all {
			i = int(cand[k])
		}
		e := &x.entries[i]
		if !sAny && e.schema != sid || !pAny && e.pkg != pid || !nAny && e.name != nid {
			continue
		}
		objects++
		start := x.offs[i]
		if last := len(spans) - 1; last >= 0 && spans[last].off+spans[last].n == start {
			spans[last].n += int64(e.n)
		} else {
			spans = append(spans, span{start, int64(e.n)})
		}
	}
	return spans, objects
}
