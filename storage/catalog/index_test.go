package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

// sampleIndex encodes a small index the way the Writer does.
func sampleIndex(t testing.TB, objs []obj) []byte {
	t.Helper()
	ids := map[string]uint32{"": 0}
	strs := []string{""}
	intern := func(s string) uint32 {
		if id, ok := ids[s]; ok {
			return id
		}
		ids[s] = uint32(len(strs))
		strs = append(strs, s)
		return ids[s]
	}
	var recs []object
	var size int64
	for _, o := range objs {
		recs = append(recs, object{intern(o.schema), intern(o.pkg), intern(o.name), int64(len(o.line))})
		size += int64(len(o.line))
	}
	return encodeIndex(strs, recs, size)
}

func TestIndexRoundTrip(t *testing.T) {
	for seed := range 20 {
		objs := genCatalog(rand.New(rand.NewPCG(uint64(seed), 5)), 10)
		idx, err := parseIndex(sampleIndex(t, objs))
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.entries) != len(objs) {
			t.Fatalf("%d entries, want %d", len(idx.entries), len(objs))
		}
		var off int64
		for i, e := range idx.entries {
			o := objs[i]
			if int(e.n) != len(o.line) || idx.strs[e.schema] != o.schema ||
				idx.strs[e.pkg] != o.pkg || idx.strs[e.name] != o.name {
				t.Fatalf("entry %d = %+v (%q %q %q), want %q %q %q", i, e,
					idx.strs[e.schema], idx.strs[e.pkg], idx.strs[e.name], o.schema, o.pkg, o.name)
			}
			off += int64(e.n)
		}
		if idx.size != off {
			t.Fatalf("size %d, want %d", idx.size, off)
		}
	}
}

// reseal recomputes the checksum after a deliberate edit, to reach the
// checks behind it.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
}

// fixedObjs is a small catalog with several distinct strings.
func fixedObjs() []obj {
	return []obj{
		{"olm.package", "", "etcd", []byte("{\"p\":1}\n")},
		{"olm.channel", "etcd", "stable", []byte("{\"c\":1}\n")},
		{"olm.bundle", "etcd", "etcd.v1", []byte("{\"b\":1}\n")},
		{"olm.bundle", "etcd", "etcd.v2", []byte("{\"b\":2}\n")},
	}
}

func TestIndexCorrupt(t *testing.T) {
	good := sampleIndex(t, fixedObjs())
	if _, err := parseIndex(good); err != nil {
		t.Fatal(err)
	}
	// Every single-byte change and every truncation is caught.
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 0x41
		if _, err := parseIndex(b); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	for n := range len(good) {
		if _, err := parseIndex(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v, want ErrCorrupt", n, err)
		}
	}
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return reseal(b)
	}
	for name, b := range map[string][]byte{
		"size too large":  edit(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], binary.LittleEndian.Uint64(b[24:])+1) }),
		"size too small":  edit(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], binary.LittleEndian.Uint64(b[24:])-1) }),
		"more objects":    edit(func(b []byte) { binary.LittleEndian.PutUint32(b[16:], binary.LittleEndian.Uint32(b[16:])+1) }),
		"fewer objects":   edit(func(b []byte) { binary.LittleEndian.PutUint32(b[16:], binary.LittleEndian.Uint32(b[16:])-1) }),
		"more strings":    edit(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], binary.LittleEndian.Uint32(b[12:])+1) }),
		"no strings":      edit(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 0) }),
		"huge counts":     edit(func(b []byte) { binary.LittleEndian.PutUint32(b[16:], 1<<31) }),
		"unsorted string": edit(func(b []byte) { b[indexHeader+2] = 0xff }), // first char of the 2nd string
	} {
		if _, err := parseIndex(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	future := edit(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 2) })
	if _, err := parseIndex(future); !errors.Is(err, ErrFormat) {
		t.Errorf("version 2: %v, want ErrFormat", err)
	}
}

// FuzzParseIndex: no input panics or yields entries outside the size.
func FuzzParseIndex(f *testing.F) {
	f.Add(sampleIndex(f, fixedObjs()))
	f.Add(sampleIndex(f, nil))
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := parseIndex(b)
		if err != nil {
			return
		}
		var off int64
		for _, e := range idx.entries {
			if e.n == 0 || int(e.schema) >= len(idx.strs) || int(e.pkg) >= len(idx.strs) || int(e.name) >= len(idx.strs) {
				t.Fatalf("bad entry %+v", e)
			}
			off += int64(e.n)
		}
		if off != idx.size {
			t.Fatalf("entries cover %d of %d", off, idx.size)
		}
	})
}

// The index holds line lengths in 32 bits: a line of 2^32-1 bytes loads,
// one of 2^32 bytes is refused rather than read back as length 0.
// Catches maxLine's bound moved (1<<32-1 to 1<<32+1).
func TestIndexLineLengthBound(t *testing.T) {
	for _, n := range []int64{maxLine, maxLine + 1} {
		idx, err := parseIndex(encodeIndex([]string{""}, []object{{n: n}}, n))
		switch {
		case n <= maxLine && (err != nil || int64(idx.entries[0].n) != n):
			t.Errorf("line of %d bytes: %v", n, err)
		case n > maxLine && !errors.Is(err, ErrCorrupt):
			t.Errorf("line of %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
}

// A catalog of one object whose names are long writes and reads back: the
// index's size estimate grows with every string. Catches a string's
// length subtracted from that estimate, which goes below the header and
// panics.
func TestIndexLongNames(t *testing.T) {
	s := newStore(t)
	long := strings.Repeat("n", 300)
	objs := []obj{{"olm.bundle", "p-" + long, "b-" + long, []byte(`{"schema":"olm.bundle"}` + "\n")}}
	writeCatalog(t, s, "long", digestOf("long"), objs)
	publish(t, s, "long", digestOf("long"), gcBase)
	c, err := Open(context.Background(), s, "long")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Query(context.Background(), &b, Query{Name: "b-" + long}); err != nil || b.String() != string(objs[0].line) {
		t.Fatalf("query: %q, %v", b.String(), err)
	}
}

// An index shorter than its header and checksum is refused as corrupt
// without a panic, even with a valid magic, version and checksum; one of
// exactly that length from a later version is refused as a format this
// reader does not know. Catches the length check loosened (indexHeader+4
// to indexHeader-4), which reads past the end, or tightened by one (< to
// <=), which calls the later version's index corrupt.
func TestIndexShortInputs(t *testing.T) {
	header := func(n int, version uint32) []byte {
		b := make([]byte, n)
		copy(b, indexMagic)
		binary.LittleEndian.PutUint32(b[8:], version)
		if n >= 16 {
			binary.LittleEndian.PutUint32(b[12:], 1) // one string
		}
		return binary.LittleEndian.AppendUint32(b[:n-4], crc32.Checksum(b[:n-4], castagnoli))
	}
	for n := 12; n < indexHeader+4; n++ {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("index of %d bytes: panic %v", n, p)
				}
			}()
			if _, err := parseIndex(header(n, indexVersion)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("index of %d bytes: %v, want ErrCorrupt", n, err)
			}
		}()
	}
	if _, err := parseIndex(header(indexHeader+4, indexVersion+1)); !errors.Is(err, ErrFormat) {
		t.Errorf("header-only index of version %d: %v, want ErrFormat", indexVersion+1, err)
	}
}

// A string whose length runs one byte past the end of the index is
// refused as corrupt, without a panic. Catches that bound's check joined
// with && instead of || or computed as len+pos instead of len-pos.
func TestIndexStringPastEnd(t *testing.T) {
	good := sampleIndex(t, fixedObjs())
	all := len(good) - 4 - indexHeader
	const pos = 2 // after the first string's length (0) and the second's
	if good[indexHeader] != 0 || all-pos+1 >= 0x80 {
		t.Fatalf("fixed index not as expected: %d bytes", len(good))
	}
	b := append([]byte(nil), good...)
	b[indexHeader+1] = byte(all - pos + 1)
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v", p)
		}
	}()
	if _, err := parseIndex(reseal(b)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("string past the end: %v, want ErrCorrupt", err)
	}
}

// An index whose string table holds a name twice is refused: a query
// finds one id by binary search and would miss the objects of the other.
// Catches the strictly-ascending check relaxed (>= to >).
func TestIndexDuplicateString(t *testing.T) {
	b := encodeIndex([]string{"", "etcd", "etcd"}, []object{{name: 1, n: 1}, {name: 2, n: 1}}, 2)
	if _, err := parseIndex(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("duplicate string: %v, want ErrCorrupt", err)
	}
}

// An index whose only string is not "" is refused: id 0 must mean "none",
// and with one string no later one shows the table is wrong. Catches the
// first-string check made at i != 0 instead of i == 0.
func TestIndexSingleStringNotEmpty(t *testing.T) {
	b := encodeIndex([]string{"etcd"}, []object{{n: 1}}, 1)
	if _, err := parseIndex(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("only string %q: %v, want ErrCorrupt", "etcd", err)
	}
}

// An object whose schema, package or name id is one past the string
// table is refused, each field on its own, before a query indexes the
// table with it. Catches any of the three bounds moved by one (>= to >)
// and the object checks joined with && instead of ||.
func TestIndexIDOutOfRange(t *testing.T) {
	good := encodeIndex([]string{"", "a"}, []object{{schema: 1, pkg: 1, name: 1, n: 1}}, 1)
	const obj = indexHeader + 3 // after "" (1 byte) and "a" (2 bytes)
	if !bytes.Equal(good[obj:obj+4], []byte{1, 1, 1, 1}) {
		t.Fatalf("unexpected layout % x", good)
	}
	if _, err := parseIndex(good); err != nil {
		t.Fatal(err)
	}
	for f, field := range []string{"schema", "package", "name"} {
		b := append([]byte(nil), good...)
		b[obj+f] = 2 // the number of strings
		if _, err := parseIndex(reseal(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s id past the strings: %v, want ErrCorrupt", field, err)
		}
	}
}

// uvarintString decodes as binary.Uvarint does at every edge: a varint
// cut short, the largest value (ten bytes, the last 1), and an overflow
// (the tenth byte above 1) are told apart from values, and an eleventh
// byte is never read. Catches the ten-byte limit moved (< to <=), the
// tenth byte's bound moved or inverted, the overflow check placed at an
// unreachable byte (MaxVarintLen64-1 to +1), and an overflow reported as
// success (-(i+1) to +(i+1)).
func TestUvarintStringEdges(t *testing.T) {
	ff9 := strings.Repeat("\xff", 9)
	for _, s := range []string{"", "\x00", "\x7f", "\x80", "\x80\x80", "\x80\x01", ff9, ff9 + "\x00", ff9 + "\x01", ff9 + "\x02", ff9 + "\x7f",
		strings.Repeat("\x80", 9) + "\x01", strings.Repeat("\x80", 10) + "\x00"} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("% x: panic %v", s, p)
				}
			}()
			v, n := uvarintString(s)
			wv, wn := binary.Uvarint([]byte(s))
			if (n > 0) != (wn > 0) || n > 0 && (v != wv || n != wn) {
				t.Errorf("% x: %d, %d; binary.Uvarint %d, %d", s, v, n, wv, wn)
			}
		}()
	}
}
