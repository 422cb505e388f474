package catalog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
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
