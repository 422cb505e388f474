package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/catalogsync/catalogsync/storage"
)

func writeStatic(t testing.TB, s storage.Store, name, digest string, objs []obj) {
	t.Helper()
	w, err := NewWriter(context.Background(), s, name, digest, Static())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, o := range objs {
		if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(context.Background(), Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatic(context.Background(), s, name, digest); err != nil {
		t.Fatal(err)
	}
}

func readKey(t testing.TB, s storage.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkStatic fails unless name's layout holds exactly want, plain and
// gzipped, and its state names digest.
func checkStatic(t testing.TB, s storage.Store, name, digest string, want []byte) {
	t.Helper()
	all, gz := StaticKeys(name)
	if got := readKey(t, s, all); !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes, want the %d of %s", all, len(got), len(want), digest)
	}
	if got := gunzip(t, readKey(t, s, gz)); !bytes.Equal(got, want) {
		t.Errorf("%s: gunzips to %d bytes, want the %d of %s", gz, len(got), len(want), digest)
	}
	if st, err := ReadStatic(context.Background(), s, name); err != nil || st.Digest != digest {
		t.Errorf("static state %+v, %v; want %s", st, err, digest)
	}
}

// Each publish moves the layout to the published bytes; a reader of the
// old api/v1/all keeps reading its bytes, and the old digest's own objects
// stay addressable.
func TestStaticLayoutFollowsPublishes(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	c1, c2 := genCatalog(r, 30), genCatalog(r, 30)
	d1, d2 := digestOf("s1"), digestOf("s2")
	writeStatic(t, s, "ops", d1, c1)
	publish(t, s, "ops", d1, time.Now())
	if got, err := PublishStatic(ctx, s, "ops"); err != nil || got != d1 {
		t.Fatalf("PublishStatic = %s, %v", got, err)
	}
	checkStatic(t, s, "ops", d1, concat(c1, Query{}))
	all, _ := StaticKeys("ops")
	inFlight, err := s.Get(ctx, all, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer inFlight.Close()
	head := make([]byte, 10)
	if _, err := io.ReadFull(inFlight, head); err != nil {
		t.Fatal(err)
	}

	writeStatic(t, s, "ops", d2, c2)
	publish(t, s, "ops", d2, time.Now().Add(time.Second))
	if got, err := PublishStatic(ctx, s, "ops"); err != nil || got != d2 {
		t.Fatalf("PublishStatic = %s, %v", got, err)
	}
	checkStatic(t, s, "ops", d2, concat(c2, Query{}))
	rest, err := io.ReadAll(inFlight)
	if err != nil {
		t.Fatal(err)
	}
	if old := concat(c1, Query{}); !bytes.Equal(append(head, rest...), old) {
		t.Errorf("a reader of the old api/v1/all read %d bytes, not the %d it started on", len(head)+len(rest), len(old))
	}
	if got := readKey(t, s, contentPrefix("ops", d1)+contentFile); !bytes.Equal(got, concat(c1, Query{})) {
		t.Errorf("the earlier digest's catalog.jsonl changed")
	}
	if got := gunzip(t, readKey(t, s, contentPrefix("ops", d1)+gzipFile)); !bytes.Equal(got, concat(c1, Query{})) {
		t.Errorf("the earlier digest's catalog.jsonl.gz changed")
	}
}

// copyHook runs before(dst) ahead of each Copy and counts them.
type copyHook struct {
	storage.Store
	before func(dst string) error
	copies int
}

func (h *copyHook) Copy(ctx context.Context, dst, src string, hd storage.Headers) (storage.Info, error) {
	h.copies++
	if h.before != nil {
		if err := h.before(dst); err != nil {
			return storage.Info{}, err
		}
	}
	return storage.Copy(ctx, h.Store, dst, src, hd)
}

// A publisher whose copy lands after a newer publisher's finished layout
// (it was slow, the other fast) reads the pointer again and copies the
// newer digest: the layout ends at the pointer, not at the slower copy.
func TestStaticLayoutConvergesWhenPublishersRace(t *testing.T) {
	base := newStore(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	c1, c2 := genCatalog(r, 20), genCatalog(r, 20)
	d1, d2 := digestOf("r1"), digestOf("r2")
	writeStatic(t, base, "ops", d1, c1)
	writeStatic(t, base, "ops", d2, c2)
	publish(t, base, "ops", d1, time.Now())
	slow := &copyHook{Store: base}
	all, _ := StaticKeys("ops")
	slow.before = func(dst string) error {
		if dst != all || slow.before == nil {
			return nil
		}
		slow.before = nil // once: the other publisher moves the pointer and finishes first
		publish(t, base, "ops", d2, time.Now().Add(time.Second))
		if got, err := PublishStatic(ctx, base, "ops"); err != nil || got != d2 {
			t.Errorf("the fast publisher: %s, %v", got, err)
		}
		return nil
	}
	got, err := PublishStatic(ctx, slow, "ops")
	if err != nil || got != d2 {
		t.Fatalf("the slow publisher: %s, %v; want %s", got, err, d2)
	}
	checkStatic(t, base, "ops", d2, concat(c2, Query{}))

	// Once the layout holds the current digest, another call copies
	// nothing.
	slow.copies = 0
	if _, err := PublishStatic(ctx, slow, "ops"); err != nil || slow.copies != 0 {
		t.Errorf("PublishStatic of a current layout: %d copies, %v", slow.copies, err)
	}
}

// A pointer that moves under every round ends the loop with
// ErrStaticMoving rather than chasing it for ever.
func TestStaticLayoutGivesUpOnAPointerThatKeepsMoving(t *testing.T) {
	base := newStore(t)
	ctx := context.Background()
	digests := make([]string, staticRounds+2)
	for i := range digests {
		digests[i] = digestOf(fmt.Sprint("m", i))
		writeStatic(t, base, "ops", digests[i], genCatalog(rand.New(rand.NewPCG(uint64(i), 9)), 3))
	}
	publish(t, base, "ops", digests[0], time.Now())
	next := 1
	h := &copyHook{Store: base}
	h.before = func(dst string) error {
		if strings.HasSuffix(dst, staticAll) && next < len(digests) {
			publish(t, base, "ops", digests[next], time.Now().Add(time.Duration(next)*time.Second))
			next++
		}
		return nil
	}
	if _, err := PublishStatic(ctx, h, "ops"); !errors.Is(err, ErrStaticMoving) {
		t.Fatalf("PublishStatic under a moving pointer: %v", err)
	}
	// Quiet again: the next call converges.
	if got, err := PublishStatic(ctx, base, "ops"); err != nil || got != digests[next-1] {
		t.Errorf("after the pointer settled: %s, %v", got, err)
	}
}

// A store refusing the layout's writes fails PublishStatic with its
// error; what was published and what readers had stay, and the next call
// once the store accepts writes converges.
func TestStaticLayoutFailureKeepsWhatWasServed(t *testing.T) {
	base := newStore(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	c1, c2 := genCatalog(r, 10), genCatalog(r, 10)
	d1, d2 := digestOf("f1"), digestOf("f2")
	writeStatic(t, base, "ops", d1, c1)
	writeStatic(t, base, "ops", d2, c2)
	publish(t, base, "ops", d1, time.Now())
	if _, err := PublishStatic(ctx, base, "ops"); err != nil {
		t.Fatal(err)
	}
	publish(t, base, "ops", d2, time.Now().Add(time.Second))
	denied := &copyHook{Store: base, before: func(string) error { return fmt.Errorf("copy: %w", storage.ErrDenied) }}
	if _, err := PublishStatic(ctx, denied, "ops"); !errors.Is(err, storage.ErrDenied) || !strings.Contains(err.Error(), staticAll) {
		t.Fatalf("PublishStatic on a store refusing writes: %v", err)
	}
	if p, _, err := Current(ctx, base, "ops"); err != nil || p.Digest != d2 {
		t.Errorf("the pointer after a failed layout: %s, %v", p.Digest, err)
	}
	checkStatic(t, base, "ops", d1, concat(c1, Query{}))
	if _, err := PublishStatic(ctx, base, "ops"); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, base, "ops", d2, concat(c2, Query{}))
}

// Hostile names never reach a key; the layout's keys stay under the
// catalog's own directory.
func TestStaticLayoutRefusesInvalidNames(t *testing.T) {
	s := newStore(t)
	for _, name := range []string{"../x", "a/b", "", "A", "x/../../y", "api"} {
		_, err := PublishStatic(context.Background(), s, name)
		switch {
		case ValidName(name) && !errors.Is(err, storage.ErrNotExist):
			t.Errorf("PublishStatic(%q) of a never published catalog: %v", name, err)
		case !ValidName(name) && !errors.Is(err, ErrInvalidName):
			t.Errorf("PublishStatic(%q): %v", name, err)
		}
	}
	all, gz := StaticKeys("a.b-c")
	if all != "catalogs/a.b-c/api/v1/all" || gz != "catalogs/a.b-c/api/v1/all.gz" {
		t.Errorf("StaticKeys = %s, %s", all, gz)
	}
}

// Static content is written whole even when offered earlier content to
// share from: the layout copies catalog.jsonl as one object.
func TestStaticWriterDoesNotShare(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	c := genCatalog(rand.New(rand.NewPCG(7, 8)), 10)
	prev := writeCatalog(t, s, "ops", digestOf("p"), c)
	w, err := NewWriter(ctx, s, "ops", digestOf("n"), ShareFrom(prev), Static())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if w.CanShare() {
		t.Fatal("a static writer offers to share")
	}
	for _, o := range c {
		if err := w.Add(o.schema, o.pkg, o.name, o.line); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Commit(ctx, Meta{})
	if err != nil || m.Format != metaFormat {
		t.Fatalf("Commit = format %d, %v", m.Format, err)
	}
}

// Content stored as shared extents (written before the layout was on) is
// streamed into api/v1/all whole.
func TestStaticLayoutOfSharedContent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	c := genCatalog(rand.New(rand.NewPCG(9, 10)), 10)
	prev := writeCatalog(t, s, "ops", digestOf("p"), c)
	w, err := NewWriter(ctx, s, "ops", digestOf("q"), ShareFrom(prev))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	var off int64
	for _, o := range c {
		if err := w.AddShared(o.schema, o.pkg, o.name, off, int64(len(o.line))); err != nil {
			t.Fatal(err)
		}
		off += int64(len(o.line))
	}
	extra := obj{"olm.package", "", "new", []byte(`{"schema":"olm.package","name":"new"}` + "\n")}
	if err := w.Add(extra.schema, extra.pkg, extra.name, extra.line); err != nil {
		t.Fatal(err)
	}
	if m, err := w.Commit(ctx, Meta{}); err != nil || m.Format != sharedFormat {
		t.Fatalf("Commit = format %d, %v", m.Format, err)
	}
	publish(t, s, "ops", digestOf("q"), time.Now())
	if _, err := PublishStatic(ctx, s, "ops"); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, s, "ops", digestOf("q"), append(concat(c, Query{}), extra.line...))
}

// noCopy hides the store's Copier: storage.Copy streams.
type noCopy struct{ storage.Store }

// A large catalog streams through the layout: what PublishStatic
// allocates does not grow with the catalog, even when every byte passes
// through this process (a store without a Copier, and the gzip).
func TestStaticLayoutStreamsLargeCatalogs(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MB catalog")
	}
	s := newStore(t)
	ctx := context.Background()
	// Lines that gzip cannot shrink much, so a buffered gzip would show.
	noise := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(11, 12))
	for i := range noise {
		noise[i] = "0123456789abcdef"[r.IntN(16)]
	}
	d := digestOf("large")
	w, err := NewWriter(ctx, s, "big", d, Static())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range 64 << 20 / 4096 {
		off := i * 4000 % (len(noise) - 4000)
		line := fmt.Appendf(nil, `{"schema":"olm.bundle","package":"p","name":"b","pad":"%s"}`+"\n", noise[off:off+4000])
		if err := w.Add("olm.bundle", "p", "b", line); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Commit(ctx, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, s, "big", d, time.Now())
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := PublishStatic(ctx, noCopy{s}, "big"); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("publishing the layout of %d MB allocated %d MB", m.Size>>20, alloc>>20)
	}
	all, _ := StaticKeys("big")
	if in, err := s.Stat(ctx, all); err != nil || in.Size != m.Size {
		t.Errorf("%s: %+v, %v", all, in, err)
	}
}
