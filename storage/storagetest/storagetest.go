// Package storagetest is the conformance suite every storage.Store backend
// must pass. It assumes nothing beyond the storage.Store contract, so the
// same tests run against the filesystem and against S3 (MinIO).
//
// Semantics the suite pins down where the interface leaves room:
//   - List prefixes are plain string prefixes, as in S3: "a/b" lists
//     "a/b/c" and also "a/bc/x" and "a/b.txt"; use "a/b/" for a "directory".
//   - Get with offset past the end returns an empty reader, not an error; a
//     negative offset is an error.
//   - PutIf with a non-empty ifMatch on a missing key is ErrPrecondition.
//   - An ETag changes when the content changes; whether rewriting identical
//     bytes changes it is backend-specific (S3 ETags hash the content).
//   - Methods called with a cancelled context fail with context.Canceled.
package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// Run runs the suite. newStore must return a new, empty store for each call
// (a fresh directory or bucket); it should register its own cleanup.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, storage.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"KeysWithSpecialCharacters", testSpecialKeys},
		{"GetRange", testGetRange},
		{"Stat", testStat},
		{"GetInfo", testGetInfo},
		{"List", testList},
		{"ListEmptyAndMissing", testListEmpty},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"NotExist", testNotExist},
		{"CancelledContext", testCancelledContext},
		{"PutIfCreate", testPutIfCreate},
		{"PutIfSwap", testPutIfSwap},
		{"PutIfAfterPutAndDelete", testPutIfAfterPutAndDelete},
		{"PutIfCreateRace", testPutIfCreateRace},
		{"PutIfSwapRace", testPutIfSwapRace},
		{"FailingReader", testFailingReader},
		{"CancelMidPut", testCancelMidPut},
		{"ReadersDuringPut", testReadersDuringPut},
		{"PutHeaders", testPutHeaders},
		{"Copy", testCopy},
		{"CopyStreamed", testCopyStreamed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// ctx returns a context that ends with the test, bounded so a hung backend
// fails instead of stalling the whole run.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// chunkyReader returns data in irregular chunk sizes, as a network stream
// would, to catch backends that assume full reads.
type chunkyReader struct {
	data []byte
	rnd  *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rnd.IntN(100_000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func put(t *testing.T, s storage.Store, key string, data []byte) storage.Info {
	t.Helper()
	in, err := s.Put(ctx(t), key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return in
}

func get(t *testing.T, s storage.Store, key string, offset, length int64) []byte {
	t.Helper()
	rc, err := s.Get(ctx(t), key, offset, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, offset, length, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): read: %v", key, offset, length, err)
	}
	return b
}

func stat(t *testing.T, s storage.Store, key string) storage.Info {
	t.Helper()
	in, err := s.Stat(ctx(t), key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	return in
}

func keys(infos []storage.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}

func testRoundTrip(t *testing.T, s storage.Store) {
	for i, size := range []int{0, 1, 1000, 5<<20 + 123} {
		key := fmt.Sprintf("rt/obj-%d", size)
		data := randBytes(uint64(i), size)
		r := &chunkyReader{data: data, rnd: rand.New(rand.NewPCG(uint64(i), 1))}
		in, err := s.Put(ctx(t), key, r)
		if err != nil {
			t.Fatalf("Put %d bytes: %v", size, err)
		}
		if in.Key != key || in.Size != int64(size) || in.ETag == "" {
			t.Errorf("Put %d bytes: info %+v", size, in)
		}
		if got := get(t, s, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("Get %d bytes: got %d bytes, content differs", size, len(got))
		}
		st := stat(t, s, key)
		if st.Key != key || st.Size != int64(size) || st.ETag != in.ETag || st.ModTime.IsZero() {
			t.Errorf("Stat after Put %d bytes: %+v, Put returned %+v", size, st, in)
		}
	}
}

func testSpecialKeys(t *testing.T, s storage.Store) {
	names := []string{
		"sp/with space/x", "sp/ümlaut-日本", "sp/plus+eq=at@colon:pct%20", "sp/.hidden", "sp/..dots",
		"sp/semi;comma,tilde~", "sp/q?hash#amp&",
	}
	for _, k := range names {
		put(t, s, k, []byte(k))
		if got := get(t, s, k, 0, -1); string(got) != k {
			t.Errorf("Get(%q) = %q", k, got)
		}
		if st := stat(t, s, k); st.Size != int64(len(k)) || st.Key != k {
			t.Errorf("Stat(%q) = %+v", k, st)
		}
	}
	list, err := s.List(ctx(t), "sp/")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if got := keys(list); !slices.Equal(got, want) {
		t.Errorf("List(sp/) = %q, want %q", got, want)
	}
}

func testGetRange(t *testing.T, s storage.Store) {
	data := randBytes(7, 1000)
	put(t, s, "range/obj", data)
	for _, tc := range []struct {
		off, n   int64
		from, to int
	}{
		{0, -1, 0, 1000},
		{10, -1, 10, 1000},
		{10, 20, 10, 30},
		{0, 1000, 0, 1000},
		{0, 5000, 0, 1000},
		{990, 100, 990, 1000},
		{999, -1, 999, 1000},
		{1000, -1, 1000, 1000},
		{1000, 10, 1000, 1000},
		{5000, -1, 1000, 1000},
		{5000, 10, 1000, 1000},
		{5, 0, 5, 5},
		{0, 0, 0, 0},
	} {
		if got := get(t, s, "range/obj", tc.off, tc.n); !bytes.Equal(got, data[tc.from:tc.to]) {
			t.Errorf("Get(offset %d, length %d) = %d bytes, want bytes [%d:%d]", tc.off, tc.n, len(got), tc.from, tc.to)
		}
	}
	// Ranges of an empty object are empty, not errors.
	put(t, s, "range/empty", nil)
	if got := get(t, s, "range/empty", 3, 4); len(got) != 0 {
		t.Errorf("range of empty object = %q", got)
	}
	if rc, err := s.Get(ctx(t), "range/obj", -1, 10); err == nil {
		rc.Close()
		t.Error("Get with negative offset succeeded")
	}
	// Small reads on a ranged reader.
	rc, err := s.Get(ctx(t), "range/obj", 100, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 7)
	for {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !bytes.Equal(got, data[100:150]) {
		t.Errorf("small reads of range = %d bytes, differ", len(got))
	}
}

// A store that reads Info with the bytes (storage.InfoGetter) gives what
// Stat gives, for any range, and the bytes of the same version.
func testGetInfo(t *testing.T, s storage.Store) {
	g, ok := s.(storage.InfoGetter)
	if !ok {
		t.Skip("not a storage.InfoGetter")
	}
	data := randBytes(11, 1000)
	put(t, s, "info/obj", data)
	put(t, s, "info/empty", nil)
	for _, tc := range []struct {
		key      string
		off, n   int64
		from, to int
	}{
		{"info/obj", 0, -1, 0, 1000},
		{"info/obj", 0, 10, 0, 10},
		{"info/obj", 990, 100, 990, 1000},
		{"info/obj", 5000, 10, 1000, 1000},
		{"info/obj", 5, 0, 5, 5},
		{"info/empty", 0, 10, 0, 0},
	} {
		rc, in, err := g.GetInfo(ctx(t), tc.key, tc.off, tc.n)
		if err != nil {
			t.Fatalf("GetInfo(%s, %d, %d): %v", tc.key, tc.off, tc.n, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := data[tc.from:tc.to]
		if tc.key == "info/empty" {
			want = nil
		}
		st := stat(t, s, tc.key)
		if !bytes.Equal(got, want) || in.Key != tc.key || in.Size != st.Size || in.ETag != st.ETag {
			t.Errorf("GetInfo(%s, %d, %d) = %d bytes, %+v; Stat %+v", tc.key, tc.off, tc.n, len(got), in, st)
		}
	}
	if _, _, err := g.GetInfo(ctx(t), "info/missing", 0, 10); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("GetInfo of a missing key: %v", err)
	}
	// A replaced object reads with its new ETag.
	in := put(t, s, "info/obj", []byte("new"))
	rc, got, err := g.GetInfo(ctx(t), "info/obj", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got.ETag != in.ETag || got.Size != 3 {
		t.Errorf("after a replace GetInfo %+v, Put %+v", got, in)
	}
}

func testStat(t *testing.T, s storage.Store) {
	first := put(t, s, "stat/obj", []byte("one"))
	st := stat(t, s, "stat/obj")
	if st.Size != 3 || st.ETag != first.ETag {
		t.Fatalf("Stat = %+v, Put returned %+v", st, first)
	}
	if again := stat(t, s, "stat/obj"); again.ETag != st.ETag {
		t.Errorf("ETag changed without a write: %q then %q", st.ETag, again.ETag)
	}
	seen := map[string]bool{first.ETag: true}
	for i, content := range []string{"two!", "", "three", "one"} {
		in := put(t, s, "stat/obj", []byte(content))
		st := stat(t, s, "stat/obj")
		if st.Size != int64(len(content)) || st.ETag != in.ETag {
			t.Errorf("write %d: Stat %+v, Put %+v", i, st, in)
		}
		// "one" came back: S3 may repeat the ETag of identical content.
		if content != "one" && seen[st.ETag] {
			t.Errorf("write %d (%q): ETag %q repeats an earlier one", i, content, st.ETag)
		}
		seen[st.ETag] = true
	}
	// Stat must not see the sibling of a similar name.
	put(t, s, "stat/objx", []byte("x"))
	if st := stat(t, s, "stat/obj"); st.Size != 3 {
		t.Errorf("Stat(stat/obj) size %d after writing stat/objx", st.Size)
	}
}

func testList(t *testing.T, s storage.Store) {
	all := []string{
		"list/a.b", "list/a/b.txt", "list/a/b/c", "list/a/b/d/e", "list/a/bc/x", "list/ab", "list/z",
		"lista", "other/x",
	}
	// Put in a scrambled order: List must sort, not echo insertion order.
	sizes := map[string]int64{}
	for i, k := range []int{4, 0, 8, 2, 6, 1, 7, 3, 5} {
		put(t, s, all[k], bytes.Repeat([]byte("x"), i))
		sizes[all[k]] = int64(i)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"list", all[:8]},
		{"list/", all[:7]},
		{"list/a", all[:6]},
		{"list/a/", all[1:5]},
		{"list/a/b", all[1:5]},
		{"list/a/b/", all[2:4]},
		{"list/a/b/c", all[2:3]},
		{"list/a/bc", all[4:5]},
		{"list/a.", all[:1]},
		{"list/z", all[6:7]},
		{"list/zz", nil},
		{"nothing/", nil},
		{"list/a/b/d/e/", nil},
		{"o", all[8:]},
	} {
		got, err := s.List(ctx(t), tc.prefix)
		if err != nil {
			t.Errorf("List(%q): %v", tc.prefix, err)
			continue
		}
		if !slices.Equal(keys(got), tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, keys(got), tc.want)
		}
		for _, in := range got {
			st := stat(t, s, in.Key)
			if in.Size != sizes[in.Key] || in.ETag != st.ETag || in.ModTime.IsZero() {
				t.Errorf("List(%q) entry %+v, Stat %+v", tc.prefix, in, st)
			}
		}
	}
}

func testListEmpty(t *testing.T, s storage.Store) {
	for _, prefix := range []string{"", "a", "a/", "a/b/"} {
		got, err := s.List(ctx(t), prefix)
		if err != nil || len(got) != 0 {
			t.Errorf("List(%q) on empty store = %v, %v", prefix, keys(got), err)
		}
	}
}

func testDelete(t *testing.T, s storage.Store) {
	put(t, s, "del/a/b/c", []byte("c"))
	put(t, s, "del/a/keep", []byte("k"))
	if err := s.Delete(ctx(t), "del/a/b/c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctx(t), "del/a/b/c"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after Delete: %v, want ErrNotExist", err)
	}
	if _, err := s.Get(ctx(t), "del/a/b/c", 0, -1); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Get after Delete: %v, want ErrNotExist", err)
	}
	for _, k := range []string{"del/a/b/c", "del/never", "del/a/b/c/d", "nowhere/at/all"} {
		if err := s.Delete(ctx(t), k); err != nil {
			t.Errorf("Delete(%q) of missing key: %v", k, err)
		}
	}
	list, err := s.List(ctx(t), "del/")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list); !slices.Equal(got, []string{"del/a/keep"}) {
		t.Errorf("List after Delete = %q", got)
	}
	// Nothing of the deleted key may linger: its former parent is now a
	// free key, and a deleted key can be written again.
	put(t, s, "del/a/b", []byte("b"))
	if got := get(t, s, "del/a/b", 0, -1); string(got) != "b" {
		t.Errorf("Get(del/a/b) = %q", got)
	}
	if err := s.Delete(ctx(t), "del/a/b"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "del/a/b/c", []byte("again"))
	if got := get(t, s, "del/a/b/c", 0, -1); string(got) != "again" {
		t.Errorf("Get after re-Put = %q", got)
	}
}

var badKeys = []string{
	"", "/", "/abs", "a/", "a//b", ".", "..", "./a", "a/./b", "../a", "a/..", "a/../b",
	"a\\b", "a\x00b", "/etc/passwd", "../../etc/passwd",
}

func testInvalidKeys(t *testing.T, s storage.Store) {
	c := ctx(t)
	for _, k := range badKeys {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, storage.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, k, err)
			}
		}
		_, err := s.Put(c, k, strings.NewReader("x"))
		check("Put", err)
		rc, err := s.Get(c, k, 0, -1)
		if rc != nil {
			rc.Close()
		}
		check("Get", err)
		_, err = s.Stat(c, k)
		check("Stat", err)
		check("Delete", s.Delete(c, k))
		_, err = s.PutIf(c, k, []byte("x"), "")
		check("PutIf", err)
	}
	for _, p := range []string{"/", "/a", "a//", "../", "a/../", "./", "a\\b", "a\x00"} {
		if _, err := s.List(c, p); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("List(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
	// Nothing may have been written by the rejected calls.
	if list, err := s.List(c, ""); err != nil || len(list) != 0 {
		t.Errorf("store not empty after invalid calls: %q, %v", keys(list), err)
	}
}

func testNotExist(t *testing.T, s storage.Store) {
	c := ctx(t)
	put(t, s, "ne/file", []byte("f"))
	for _, k := range []string{"ne/missing", "missing", "ne/file/below", "ne"} {
		if _, err := s.Stat(c, k); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", k, err)
		}
		rc, err := s.Get(c, k, 0, -1)
		if rc != nil {
			rc.Close()
		}
		if !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Get(%q) = %v, want ErrNotExist", k, err)
		}
		rc, err = s.Get(c, k, 10, 5)
		if rc != nil {
			rc.Close()
		}
		if !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("ranged Get(%q) = %v, want ErrNotExist", k, err)
		}
	}
	if _, err := s.PutIf(c, "ne/missing", []byte("x"), "some-etag"); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("PutIf on missing key with ifMatch = %v, want ErrPrecondition", err)
	}
	if _, err := s.Stat(c, "ne/missing"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("failed PutIf created the object: %v", err)
	}
}

func testCancelledContext(t *testing.T, s storage.Store) {
	put(t, s, "cc/obj", []byte("old"))
	c, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled context = %v, want context.Canceled", op, err)
		}
	}
	_, err := s.Put(c, "cc/obj", strings.NewReader("new"))
	check("Put", err)
	_, err = s.Put(c, "cc/new", strings.NewReader("new"))
	check("Put", err)
	rc, err := s.Get(c, "cc/obj", 0, -1)
	if err == nil {
		// A lazily connecting backend may fail on the first read instead.
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	check("Get", err)
	_, err = s.Stat(c, "cc/obj")
	check("Stat", err)
	_, err = s.List(c, "")
	check("List", err)
	check("Delete", s.Delete(c, "cc/obj"))
	_, err = s.PutIf(c, "cc/obj", []byte("new"), stat(t, s, "cc/obj").ETag)
	check("PutIf", err)
	if got := get(t, s, "cc/obj", 0, -1); string(got) != "old" {
		t.Errorf("object changed by cancelled calls: %q", got)
	}
	if _, err := s.Stat(ctx(t), "cc/new"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("cancelled Put created an object: %v", err)
	}
}

func testPutIfCreate(t *testing.T, s storage.Store) {
	c := ctx(t)
	in, err := s.PutIf(c, "pi/ptr", []byte("first"), "")
	if err != nil {
		t.Fatalf("PutIf create: %v", err)
	}
	if in.Key != "pi/ptr" || in.Size != 5 || in.ETag == "" {
		t.Errorf("PutIf info %+v", in)
	}
	if st := stat(t, s, "pi/ptr"); st.ETag != in.ETag || st.Size != 5 {
		t.Errorf("Stat %+v after PutIf %+v", st, in)
	}
	if _, err := s.PutIf(c, "pi/ptr", []byte("second"), ""); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("second create-only PutIf = %v, want ErrPrecondition", err)
	}
	if got := get(t, s, "pi/ptr", 0, -1); string(got) != "first" {
		t.Errorf("content after refused PutIf = %q", got)
	}
	// An empty object is a valid pointer.
	if _, err := s.PutIf(c, "pi/empty", nil, ""); err != nil {
		t.Errorf("PutIf of empty data: %v", err)
	}
	if st := stat(t, s, "pi/empty"); st.Size != 0 {
		t.Errorf("empty PutIf size %d", st.Size)
	}
}

func testPutIfSwap(t *testing.T, s storage.Store) {
	c := ctx(t)
	in, err := s.PutIf(c, "ps/ptr", []byte("v0"), "")
	if err != nil {
		t.Fatal(err)
	}
	etags := []string{in.ETag}
	for i := 1; i <= 5; i++ {
		data := fmt.Appendf(nil, "v%d", i)
		next, err := s.PutIf(c, "ps/ptr", data, in.ETag)
		if err != nil {
			t.Fatalf("CAS %d: %v", i, err)
		}
		if slices.Contains(etags, next.ETag) {
			t.Errorf("CAS %d: ETag %q repeats", i, next.ETag)
		}
		etags = append(etags, next.ETag)
		// Every older ETag is now stale.
		for _, old := range etags[:len(etags)-1] {
			if _, err := s.PutIf(c, "ps/ptr", []byte("stale"), old); !errors.Is(err, storage.ErrPrecondition) {
				t.Errorf("CAS with stale ETag %q = %v, want ErrPrecondition", old, err)
			}
		}
		if _, err := s.PutIf(c, "ps/ptr", []byte("bogus"), "not-an-etag"); !errors.Is(err, storage.ErrPrecondition) {
			t.Errorf("CAS with bogus ETag = %v, want ErrPrecondition", err)
		}
		if got := get(t, s, "ps/ptr", 0, -1); !bytes.Equal(got, data) {
			t.Errorf("after CAS %d content = %q", i, got)
		}
		if st := stat(t, s, "ps/ptr"); st.ETag != next.ETag {
			t.Errorf("Stat ETag %q, PutIf returned %q", st.ETag, next.ETag)
		}
		in = next
	}
}

func testPutIfAfterPutAndDelete(t *testing.T, s storage.Store) {
	c := ctx(t)
	p := put(t, s, "pd/ptr", []byte("plain"))
	// A plain Put's ETag works for CAS, and Put invalidates older ETags.
	in, err := s.PutIf(c, "pd/ptr", []byte("cas"), p.ETag)
	if err != nil {
		t.Fatalf("PutIf with ETag of Put: %v", err)
	}
	put(t, s, "pd/ptr", []byte("overwritten"))
	if _, err := s.PutIf(c, "pd/ptr", []byte("lost"), in.ETag); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("PutIf after an intervening Put = %v, want ErrPrecondition", err)
	}
	// After Delete the key is missing again: create-only succeeds, an old
	// ETag does not.
	last := stat(t, s, "pd/ptr")
	if err := s.Delete(c, "pd/ptr"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIf(c, "pd/ptr", []byte("x"), last.ETag); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("PutIf with ETag of deleted object = %v, want ErrPrecondition", err)
	}
	if _, err := s.PutIf(c, "pd/ptr", []byte("recreated"), ""); err != nil {
		t.Errorf("create-only PutIf after Delete: %v", err)
	}
	if got := get(t, s, "pd/ptr", 0, -1); string(got) != "recreated" {
		t.Errorf("content = %q", got)
	}
}

func testPutIfCreateRace(t *testing.T, s storage.Store) {
	const n = 16
	c := ctx(t)
	for round := range 3 {
		key := fmt.Sprintf("race/create-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.PutIf(c, key, fmt.Appendf(nil, "writer %d", i), "")
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("round %d: writers %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, storage.ErrPrecondition):
				t.Errorf("round %d: writer %d: %v, want ErrPrecondition", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		if got := get(t, s, key, 0, -1); string(got) != fmt.Sprintf("writer %d", winner) {
			t.Errorf("round %d: content %q, winner %d", round, got, winner)
		}
	}
}

func testPutIfSwapRace(t *testing.T, s storage.Store) {
	const n = 8
	c := ctx(t)
	if _, err := s.PutIf(c, "race/ptr", []byte("start"), ""); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		etag := stat(t, s, "race/ptr").ETag
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.PutIf(c, "race/ptr", fmt.Appendf(nil, "round %d writer %d", round, i), etag)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		winner := -1
		for i, err := range errs {
			if err == nil {
				winners++
				winner = i
			} else if !errors.Is(err, storage.ErrPrecondition) {
				t.Errorf("round %d: writer %d: %v, want ErrPrecondition", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
		if got := get(t, s, "race/ptr", 0, -1); string(got) != fmt.Sprintf("round %d writer %d", round, winner) {
			t.Errorf("round %d: content %q, winner %d", round, got, winner)
		}
	}
}

var errBoom = errors.New("storagetest: reader failed")

// failingReader yields n bytes of data then fails (or, with cancel set,
// cancels the Put's context and keeps yielding data up to a limit).
type failingReader struct {
	n      int
	cancel context.CancelFunc
	read   int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.read >= f.n {
		if f.cancel == nil {
			return 0, errBoom
		}
		f.cancel()
		if f.read >= 4*f.n {
			// A backend ignoring cancellation ends here and the test
			// sees a successful Put.
			return 0, io.EOF
		}
	}
	m := min(len(p), 64<<10)
	for i := range m {
		p[i] = byte(f.read + i)
	}
	f.read += m
	return m, nil
}

// checkUntouched asserts key still holds old (or nothing, for old == nil)
// and that no other object appeared under prefix.
func checkUntouched(t *testing.T, s storage.Store, prefix, key string, old []byte, others []string) {
	t.Helper()
	if old == nil {
		if _, err := s.Stat(ctx(t), key); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("failed Put left an object at %q: %v", key, err)
		}
	} else if got := get(t, s, key, 0, -1); !bytes.Equal(got, old) {
		t.Errorf("failed Put changed %q: %d bytes", key, len(got))
	}
	list, err := s.List(ctx(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list); !slices.Equal(got, others) {
		t.Errorf("List(%q) after failed Put = %q, want %q", prefix, got, others)
	}
}

func testFailingReader(t *testing.T, s storage.Store) {
	old := randBytes(3, 100_000)
	put(t, s, "fail/existing", old)
	if _, err := s.Put(ctx(t), "fail/existing", &failingReader{n: 1 << 20}); err == nil {
		t.Error("Put with failing reader over an existing object succeeded")
	}
	checkUntouched(t, s, "fail/", "fail/existing", old, []string{"fail/existing"})
	if _, err := s.Put(ctx(t), "fail/new/deep", &failingReader{n: 1 << 20}); err == nil {
		t.Error("Put with failing reader of a new object succeeded")
	}
	checkUntouched(t, s, "fail/", "fail/new/deep", nil, []string{"fail/existing"})
	// Failing before the first byte is no different.
	if _, err := s.Put(ctx(t), "fail/existing", &failingReader{n: 0}); err == nil {
		t.Error("Put with immediately failing reader succeeded")
	}
	checkUntouched(t, s, "fail/", "fail/existing", old, []string{"fail/existing"})
}

func testCancelMidPut(t *testing.T, s storage.Store) {
	old := randBytes(4, 100_000)
	put(t, s, "cancel/existing", old)
	for _, key := range []string{"cancel/existing", "cancel/new"} {
		c, cancel := context.WithCancel(ctx(t))
		_, err := s.Put(c, key, &failingReader{n: 2 << 20, cancel: cancel})
		cancel()
		if err == nil {
			t.Errorf("Put(%q) cancelled mid-stream succeeded", key)
		}
	}
	checkUntouched(t, s, "cancel/", "cancel/existing", old, []string{"cancel/existing"})
	checkUntouched(t, s, "cancel/", "cancel/new", nil, []string{"cancel/existing"})
}

func testReadersDuringPut(t *testing.T, s storage.Store) {
	const size = 2 << 20
	versions := [][]byte{randBytes(10, size), randBytes(11, size+1000), randBytes(12, size/2)}
	sums := map[[32]byte]int{}
	for i, v := range versions {
		sums[sha256.Sum256(v)] = i
	}
	put(t, s, "rdp/obj", versions[0])
	c := ctx(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := 1; i <= 12; i++ {
			v := versions[i%len(versions)]
			r := &chunkyReader{data: v, rnd: rand.New(rand.NewPCG(uint64(i), 2))}
			if _, err := s.Put(c, "rdp/obj", r); err != nil {
				t.Errorf("writer Put %d: %v", i, err)
				return
			}
		}
	})
	var mu sync.Mutex
	seen := map[int]int{}
	for r := range 4 {
		wg.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						return
					}
				default:
				}
				rc, err := s.Get(c, "rdp/obj", 0, -1)
				if err != nil {
					t.Errorf("reader %d: Get: %v", r, err)
					return
				}
				h := sha256.New()
				_, err = io.Copy(h, rc)
				rc.Close()
				if err != nil {
					t.Errorf("reader %d: read: %v", r, err)
					return
				}
				v, ok := sums[[32]byte(h.Sum(nil))]
				if !ok {
					t.Errorf("reader %d: read content that is no complete version", r)
					return
				}
				mu.Lock()
				seen[v]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("versions seen by readers: %v", seen)
}
