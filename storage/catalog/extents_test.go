package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// shareLine is line i of the shared-content tests' catalogs.
func shareLine(tag string, i int) obj {
	name := fmt.Sprintf("%s%d", tag, i)
	return obj{"olm.bundle", "p" + fmt.Sprint(i%3), name,
		fmt.Appendf(nil, `{"schema":"olm.bundle","package":"p%d","name":%q,"pad":%q}`+"\n", i%3, name, strings.Repeat("y", 10+i))}
}

// shareStep is one object a shared writer adds: from the earlier content
// (at its offset there) or new.
type shareStep struct {
	o      obj
	shared bool
	off    int64
}

// writeShared writes digest of name sharing from prev with steps, and
// returns its meta and the catalog.jsonl it must read as.
func writeShared(t *testing.T, s storage.Store, name, digest string, prev Meta, steps []shareStep) (Meta, []byte) {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(ctx, s, name, digest, ShareFrom(prev))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	var want []byte
	for _, st := range steps {
		if st.shared {
			if !w.CanShare() {
				t.Fatal("CanShare false")
			}
			err = w.AddShared(st.o.schema, st.o.pkg, st.o.name, st.off, int64(len(st.o.line)))
		} else {
			err = w.Add(st.o.schema, st.o.pkg, st.o.name, st.o.line)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, st.o.line...)
	}
	m, err := w.Commit(ctx, Meta{Created: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return m, want
}

// sharedChain writes v1 (ten lines, format 1), v2 sharing v1 but for line
// 4, replaced, and v3 sharing all of v2 plus a new last line; it returns
// the digests and the catalog.jsonl each must read as.
func sharedChain(t *testing.T, s storage.Store, name string) (ds []string, metas []Meta, want [][]byte) {
	t.Helper()
	var v1 []obj
	var offs []int64
	var pos int64
	for i := range 10 {
		o := shareLine("a", i)
		v1 = append(v1, o)
		offs = append(offs, pos)
		pos += int64(len(o.line))
	}
	ds = []string{digestOf(name + "1"), digestOf(name + "2"), digestOf(name + "3")}
	m1 := writeCatalog(t, s, name, ds[0], v1)
	var all1 []byte
	for _, o := range v1 {
		all1 = append(all1, o.line...)
	}
	var steps2 []shareStep
	for i, o := range v1 {
		if i == 4 {
			steps2 = append(steps2, shareStep{o: shareLine("b", 4)})
			continue
		}
		steps2 = append(steps2, shareStep{o: o, shared: true, off: offs[i]})
	}
	m2, all2 := writeShared(t, s, name, ds[1], m1, steps2)
	var steps3 []shareStep
	pos = 0
	for _, st := range steps2 {
		steps3 = append(steps3, shareStep{o: st.o, shared: true, off: pos})
		pos += int64(len(st.o.line))
	}
	steps3 = append(steps3, shareStep{o: shareLine("c", 10)})
	m3, all3 := writeShared(t, s, name, ds[2], m2, steps3)
	return ds, []Meta{m1, m2, m3}, [][]byte{all1, all2, all3}
}

// Shared content reads as the catalog.jsonl it describes, whole, by any
// range and by query, on both backends; its extents name only the objects
// the bytes are in.
func TestSharedContent(t *testing.T) {
	backends, _ := gcBackends(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := b.store(t)
			ctx := context.Background()
			ds, metas, want := sharedChain(t, s, "c")
			if metas[0].Format != metaFormat || metas[0].SHA256 != sha256Hex(want[0]) || len(metas[0].Extents) != 0 {
				t.Fatalf("v1 meta %+v", metas[0])
			}
			v1, v2 := digestDir(ds[0]), digestDir(ds[1])
			wantExt := [][]Extent{nil,
				{{v1 + "/catalog.jsonl", 0, int64(bytes.Index(want[0], shareLine("a", 4).line))},
					{v2 + "/delta.jsonl", 0, int64(len(shareLine("b", 4).line))},
					{v1 + "/catalog.jsonl", int64(bytes.Index(want[0], shareLine("a", 5).line)), int64(len(want[0]) - bytes.Index(want[0], shareLine("a", 5).line))}},
			}
			// v3 refers to v1's and v2's objects, never to v2's catalog.jsonl.
			wantExt = append(wantExt, append(slices.Clone(wantExt[1]), Extent{digestDir(ds[2]) + "/delta.jsonl", 0, int64(len(shareLine("c", 10).line))}))
			for i, m := range metas[1:] {
				if m.Format != sharedFormat || m.SHA256 != "" || !slices.Equal(m.Extents, wantExt[i+1]) {
					t.Fatalf("v%d meta format %d sha %q extents %+v; want %+v", i+2, m.Format, m.SHA256, m.Extents, wantExt[i+1])
				}
			}
			if got := metas[2].Sources(); !slices.Equal(got, ds[:2]) {
				t.Fatalf("v3 sources %v", got)
			}
			for i, d := range ds {
				c, err := OpenDigest(ctx, s, "c", d)
				if err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, c); !bytes.Equal(got, want[i]) {
					t.Fatalf("v%d reads\n%s\nwant\n%s", i+1, got, want[i])
				}
				checkRanges(t, c, want[i])
				checkQueries(t, c, want[i])
			}
			// The files of v2 other than its delta are not read by v3.
			if list, _ := s.List(ctx, contentPrefix("c", ds[1])+contentFile); len(list) != 0 {
				t.Fatalf("shared content wrote catalog.jsonl: %v", list)
			}
		})
	}
}

// checkRanges compares OpenRange with want over ranges starting and
// ending everywhere, so every extent boundary is crossed.
func checkRanges(t *testing.T, c *Catalog, want []byte) {
	t.Helper()
	for off := int64(0); off <= int64(len(want)); off += 13 {
		for _, n := range []int64{0, 1, 37, 150, int64(len(want)) - off} {
			if off+n > int64(len(want)) {
				continue
			}
			rc, err := c.OpenRange(context.Background(), off, n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, want[off:off+n]) {
				t.Fatalf("range %d+%d: %q, %v; want %q", off, n, got, err, want[off:off+n])
			}
		}
	}
	if _, err := c.OpenRange(context.Background(), 1, int64(len(want))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("range past the end: %v", err)
	}
}

// checkQueries compares every package query with the lines of want.
func checkQueries(t *testing.T, c *Catalog, want []byte) {
	t.Helper()
	for _, pkg := range []string{"p0", "p1", "p2"} {
		var exp []byte
		for _, l := range bytes.SplitAfter(want, []byte("\n")) {
			if bytes.Contains(l, []byte(`"package":"`+pkg+`"`)) {
				exp = append(exp, l...)
			}
		}
		var got bytes.Buffer
		if err := c.Query(context.Background(), &got, Query{Package: pkg}); err != nil || !bytes.Equal(got.Bytes(), exp) {
			t.Fatalf("package %s: %q, %v; want %q", pkg, got.Bytes(), err, exp)
		}
	}
}

// A writer does not share from content too fragmented, referring to too
// many objects, or whose objects are gone: it copies, and writes format 1.
func TestShareFromDeclines(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var objs []obj
	for i := range 2 * maxShareExtents {
		objs = append(objs, shareLine("a", i))
	}
	m1 := writeCatalog(t, s, "c", digestOf(1), objs)
	// Every other line new: 2*maxShareExtents extents.
	var steps []shareStep
	var pos int64
	for i, o := range objs {
		st := shareStep{o: o, shared: true, off: pos}
		if i%2 == 1 {
			st = shareStep{o: shareLine("b", i)}
		}
		steps = append(steps, st)
		pos += int64(len(o.line))
	}
	m2, _ := writeShared(t, s, "c", digestOf(2), m1, steps)
	if len(m2.Extents) != 2*maxShareExtents {
		t.Fatalf("%d extents", len(m2.Extents))
	}
	cases := map[string]Meta{"fragmented": m2, "other catalog": {Name: "d", Digest: m1.Digest, Format: 1, Size: m1.Size}}
	// Sources at the limit.
	many := m1
	many.Format, many.SHA256 = sharedFormat, ""
	for i := range maxShareSources {
		many.Extents = append(many.Extents, Extent{digestDir(digestOf(100+i)) + "/catalog.jsonl", 0, 1})
	}
	cases["sources"] = many
	missing := m1
	missing.Digest = digestOf(3) // no such content: its catalog.jsonl is missing
	cases["missing"] = missing
	_, chain, _ := sharedChain(t, s, "e")
	if w, _ := NewWriter(ctx, s, "e", digestOf("e4"), ShareFrom(chain[2])); !w.CanShare() {
		t.Fatal("does not share from a short chain: the cases below would prove nothing")
	} else {
		w.Abort()
	}
	short := chain[2]
	short.Extents = slices.Clone(short.Extents)
	short.Extents[1].Off += 1 << 20 // past the end of v2's delta.jsonl
	cases["short"] = short
	for name, prev := range cases {
		cat := "c"
		if name == "short" {
			cat = "e"
		}
		w, err := NewWriter(ctx, s, cat, digestOf(name), ShareFrom(prev))
		if err != nil {
			t.Fatal(err)
		}
		if w.CanShare() {
			t.Errorf("%s: shares", name)
		}
		if err := w.AddShared("olm.bundle", "p", "x", 0, 10); !errors.Is(err, ErrInvalidLine) {
			t.Errorf("%s: AddShared without CanShare: %v", name, err)
		}
		w.Abort()
	}
	// Sharing from itself is never done.
	w, err := NewWriter(ctx, s, "c", m1.Digest, ShareFrom(m1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if w.CanShare() {
		t.Error("shares from its own digest")
	}
}

// A meta.json whose extents do not describe its catalog.jsonl is corrupt:
// the content counts as incomplete (written again), never served.
func TestSharedMetaValidation(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds, metas, _ := sharedChain(t, s, "c")
	bad := map[string]func(m *Meta){
		"sum":            func(m *Meta) { m.Extents[0].Len++ },
		"escape":         func(m *Meta) { m.Extents[0].Object = "../../x/catalog.jsonl" },
		"other file":     func(m *Meta) { m.Extents[0].Object = digestDir(ds[0]) + "/meta.json" },
		"negative":       func(m *Meta) { m.Extents[0].Off = -1 },
		"empty extent":   func(m *Meta) { m.Extents = append(m.Extents, Extent{m.Extents[0].Object, 0, 0}) },
		"format 1":       func(m *Meta) { m.Format = metaFormat },
		"none":           func(m *Meta) { m.Extents = nil },
		"too many":       func(m *Meta) { m.Extents = make([]Extent, maxExtents+1) },
		"overflowing":    func(m *Meta) { m.Extents[0].Off = 1 << 62 },
		"no digest dir":  func(m *Meta) { m.Extents[0].Object = "catalog.jsonl" },
		"bad digest dir": func(m *Meta) { m.Extents[0].Object = "sha256-00/catalog.jsonl" },
	}
	for name, mutate := range bad {
		m := metas[1]
		m.Extents = slices.Clone(m.Extents)
		mutate(&m)
		putMeta(t, s, m)
		if _, ok, err := HasContent(ctx, s, "c", ds[1]); ok || err != nil {
			t.Errorf("%s: HasContent %v, %v", name, ok, err)
		}
	}
	putMeta(t, s, metas[1])
	if _, ok, err := HasContent(ctx, s, "c", ds[1]); !ok || err != nil {
		t.Fatalf("restored: %v, %v", ok, err)
	}
}

func putMeta(t *testing.T, s storage.Store, m Meta) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), contentPrefix(m.Name, m.Digest)+metaFile, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// An object shorter than an extent says is corrupt content, never lines
// shifted into the wrong places.
func TestSharedObjectShorter(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds, _, want := sharedChain(t, s, "c")
	// v2's delta (one line) loses its last byte.
	key := contentPrefix("c", ds[1]) + deltaFile
	delta := shareLine("b", 4).line
	if _, err := s.Put(ctx, key, bytes.NewReader(delta[:len(delta)-1])); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds[1:] {
		c, err := OpenDigest(ctx, s, "c", d)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := c.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: read %d of %d bytes, %v; want ErrCorrupt", d, len(got), len(want[1]), err)
		}
	}
	// A missing object fails OpenRange itself.
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	c, err := OpenDigest(ctx, s, "c", ds[1])
	if err != nil {
		t.Fatal(err)
	}
	off := int64(bytes.Index(want[1], delta))
	if _, err := c.OpenRange(ctx, off, 5); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("missing delta: %v", err)
	}
	// A query's error names what the content is made of: shared content
	// has no catalog.jsonl of its own.
	err = c.Query(ctx, io.Discard, Query{})
	if !errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), deltaFile+" and the lines it shares") ||
		strings.Contains(err.Error(), digestDir(ds[1])+"/"+contentFile) {
		t.Fatalf("query of content missing its delta: %v", err)
	}
}

// A refused sharing writer ended early removes its delta.jsonl, as a
// copying one removes its catalog.jsonl.
func TestSharedAbortAfterEndContent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m1 := writeCatalog(t, s, "c", digestOf(1), []obj{shareLine("a", 0)})
	w, err := NewWriter(ctx, s, "c", digestOf(2), ShareFrom(m1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddShared("olm.bundle", "p0", "a0", 0, m1.Size); err != nil {
		t.Fatal(err)
	}
	o := shareLine("b", 1)
	if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
		t.Fatal(err)
	}
	if err := w.EndContent(); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if list, err := s.List(ctx, contentPrefix("c", digestOf(2))); err != nil || len(list) != 0 {
		t.Fatalf("left %v, %v", list, err)
	}
}

// GC keeps content whose lines kept content shares, however old, and
// deletes it once nothing kept shares it.
func testGCShared(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ds, _, want := sharedChain(t, s, "c")
	publish(t, s, "c", ds[2], gcBase)
	rep := gcRunT(t, s, GCOptions{Keep: -1, Grace: -1})
	reasons := gcReasons(rep.Kept)
	for _, d := range ds[:2] {
		if reasons["c "+d] != GCReferenced {
			t.Fatalf("%s: kept %v, deleted %v", d, rep.Kept, rep.Deleted)
		}
	}
	if len(rep.Deleted) != 0 || rep.InactiveBytes == 0 {
		t.Fatalf("deleted %v, inactive bytes %d", rep.Deleted, rep.InactiveBytes)
	}
	c, err := Open(ctx, s, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, c), want[2]) {
		t.Fatal("the current content no longer reads whole")
	}
	// v2 current: v3 goes, v1 stays for v2.
	publish(t, s, "c", ds[1], gcBase.Add(time.Hour))
	rep = gcRunT(t, s, GCOptions{Keep: -1, Grace: -1})
	if got := gcDigestsIn(t, s, "c", ds); !slices.Equal(got, ds[:2]) {
		t.Fatalf("left %v; kept %v deleted %v", got, rep.Kept, rep.Deleted)
	}
	// Content sharing nothing current: everything else goes.
	d4 := digestOf("c4")
	writeCatalog(t, s, "c", d4, []obj{shareLine("d", 0)})
	publish(t, s, "c", d4, gcBase.Add(2*time.Hour))
	gcRunT(t, s, GCOptions{Keep: -1, Grace: -1})
	if got := gcDigestsIn(t, s, "c", append(ds, d4)); !slices.Equal(got, []string{d4}) {
		t.Fatalf("left %v", got)
	}
}
