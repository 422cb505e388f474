package catalog

// Tests written against the mutants that survived test/mutation.sh, or
// that it could not reach (switch-case conditions); see docs/testing.md.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
)

// hookStore runs hook before each PutIf; a non-nil error from it is
// returned instead of writing.
type hookStore struct {
	storage.Store
	mu   sync.Mutex
	n    int // PutIf calls so far
	hook func(ctx context.Context, n int, key string) error
}

func (h *hookStore) PutIf(ctx context.Context, key string, data []byte, ifMatch string) (storage.Info, error) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	if err := h.hook(ctx, n, key); err != nil {
		return storage.Info{}, err
	}
	return h.Store.PutIf(ctx, key, data, ifMatch)
}

func (h *hookStore) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// waitCalls waits (bounded) until the store saw at least n PutIf calls
// from l, or l is lost.
func waitCalls(t *testing.T, h *hookStore, n int, l *Lease) {
	t.Helper()
	for i := 0; h.calls() < n; i++ {
		if i == 1000 || l.Context().Err() != nil {
			t.Fatalf("%d PutIf calls, waited for %d; lease: %v", h.calls(), n, context.Cause(l.Context()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A zero or negative TTL means DefaultLeaseTTL: a live lease, not one that
// expires at once (or a renewal ticker that panics).
func TestLeaseDefaultTTL(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for i, ttl := range []time.Duration{0, -time.Second} {
		name := []string{"zero", "negative"}[i]
		before := time.Now()
		l, rec, err := AcquireLease(ctx, s, name, "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Expires.Sub(before) < DefaultLeaseTTL || DefaultLeaseTTL < time.Second {
			t.Errorf("ttl %v: expires %v after acquiring, default %v", ttl, rec.Expires.Sub(before), DefaultLeaseTTL)
		}
		if _, _, err := AcquireLease(ctx, s, name, "sha256:bb", LeaseHolder{Replica: "b", Instance: "b1"}, ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("ttl %v: another holder got the lease: %v", ttl, err)
		}
		l.Release(ctx)
	}
}

// A renewal that hangs on the store gives up well within the TTL, so the
// holder learns it may have lost the lease before another replica can
// take it over.
func TestLeaseRenewalBoundedByTTL(t *testing.T) {
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	var mu sync.Mutex
	var left time.Duration // the first renewal's time left
	h := &hookStore{Store: newStore(t), hook: func(ctx context.Context, n int, _ string) error {
		if n != 2 { // the first renewal (1 acquires, 3 releases)
			return nil
		}
		d, ok := ctx.Deadline()
		if !ok {
			t.Error("renewal without a deadline")
		}
		mu.Lock()
		left = time.Until(d)
		mu.Unlock()
		return nil
	}}
	l, _, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitCalls(t, h, 2, l)
	l.Release(ctx)
	mu.Lock()
	defer mu.Unlock()
	if left >= ttl {
		t.Fatalf("a renewal may take %v, the lease lasts %v", left, ttl)
	}
}

// One failed renewal (the store briefly unreachable) does not lose the
// lease: the next one renews it.
func TestLeaseSurvivesOneFailedRenewal(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Second
	h := &hookStore{Store: newStore(t), hook: func(_ context.Context, n int, _ string) error {
		if n == 2 { // the first renewal
			return errInjected
		}
		return nil
	}}
	l, _, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	waitCalls(t, h, 4, l) // the failed renewal and two good ones
	if err := l.Context().Err(); err != nil {
		t.Fatalf("lease lost after one failed renewal: %v", context.Cause(l.Context()))
	}
	rec, err := ReadLease(ctx, h, "x")
	if err != nil || rec.Instance != "a1" || !rec.Expires.After(time.Now()) {
		t.Fatalf("lease after renewals: %+v %v", rec, err)
	}
}

// Losing the compare-and-swap to another writer (here: a replica whose
// lease has already expired writes between our read and our swap) makes
// AcquireLease read again and retry, not give up.
func TestLeaseRetriesAfterLostSwap(t *testing.T) {
	ctx := context.Background()
	base := newStore(t)
	expired := LeaseRecord{LeaseHolder: LeaseHolder{Replica: "b", Instance: "b1"}, Digest: "sha256:bb", Expires: time.Now().Add(-time.Minute)}
	h := &hookStore{Store: base, hook: func(ctx context.Context, n int, key string) error {
		if n == 1 {
			if _, err := base.PutIf(ctx, key, leaseData(expired), ""); err != nil {
				t.Errorf("the other writer: %v", err)
			}
		}
		return nil
	}}
	l, rec, err := AcquireLease(ctx, h, "x", "sha256:aa", LeaseHolder{Replica: "a", Instance: "a1"}, time.Minute)
	if err != nil {
		t.Fatalf("after one lost swap: %v", err)
	}
	defer l.Release(ctx)
	if rec.Instance != "a1" || h.calls() != 2 {
		t.Fatalf("record %+v after %d swaps, want ours after 2", rec, h.calls())
	}
}

// TestGCShort runs TestGC's cases on the filesystem store under -short,
// where TestGC skips (it needs MinIO for its other backend): without it
// GC has no -short test at all, and mutation testing sees none.
func TestGCShort(t *testing.T) {
	if !testing.Short() {
		t.Skip("TestGC runs these on both backends")
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Store)
	}{
		{"KeepNewest", testGCKeepNewest},
		{"GraceFromLastSwap", testGCGraceFromLastSwap},
		{"LRUBySize", testGCLRUBySize},
		{"RemovedCatalogs", testGCRemovedCatalogs},
		{"Incomplete", testGCIncomplete},
		{"DryRun", testGCDryRun},
		{"Republished", testGCRepublished},
		{"PublishedAfterListing", testGCPublishedAfterListing},
		{"LeavesWhatItDoesNotKnow", testGCLeavesUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

// The grace period and the unconfigured age are inclusive: content out of
// reach for exactly Grace goes, a nanosecond less stays; a catalog
// untouched for exactly UnconfiguredAge goes, a nanosecond less stays.
func TestGCAgesAtTheBoundary(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d0, d1 := digestOf("b0"), digestOf("b1")
	gcContent(t, s, "b", d0, gcBase, 3)
	gcContent(t, s, "b", d1, gcBase.Add(time.Hour), 3)
	publish(t, s, "b", d0, gcBase)
	publish(t, s, "b", d1, gcBase.Add(time.Hour))
	newest := func(prefix string) (last time.Time) {
		l, err := s.List(ctx, prefix)
		if err != nil || len(l) == 0 {
			t.Fatalf("List(%s) = %v, %v", prefix, l, err)
		}
		for _, in := range l {
			last = gcLater(last, in.ModTime)
		}
		return last
	}
	// d0 was reachable until the swap, the pointer's last write.
	swap := newest(catalogPrefix("b") + currentFile)
	const grace = time.Hour
	at := func(t time.Time) func() time.Time { return func() time.Time { return t } }
	rep := gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, DryRun: true, Now: at(swap.Add(grace - 1))})
	if r := gcReasons(rep.Kept)["b "+d0]; r != GCInGrace {
		t.Fatalf("a nanosecond before the grace ends: d0 %q, want kept in grace", r)
	}
	rep = gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, DryRun: true, Now: at(swap.Add(grace))})
	if r := gcReasons(rep.Deleted)["b "+d0]; r != GCOld {
		t.Fatalf("when the grace ends: d0 %q, want deleted", r)
	}

	gcContent(t, s, "gone", digestOf("g0"), gcBase, 3)
	touched := newest(catalogPrefix("gone"))
	const age = 2 * time.Hour
	removed := func(now time.Time) bool {
		rep := gcRunT(t, s, GCOptions{Catalogs: []string{"b"}, Grace: grace, UnconfiguredAge: age, DryRun: true, Now: at(now)})
		return gcReasons(rep.Deleted)["gone "] == GCRemovedCatalog
	}
	if removed(touched.Add(age - 1)) {
		t.Fatal("unconfigured catalog removed a nanosecond before its age")
	}
	if !removed(touched.Add(age)) {
		t.Fatal("unconfigured catalog not removed at its age")
	}
}

// Evicting down to exactly the size cap meets it: no problem reported.
func TestGCCapMetExactly(t *testing.T) {
	s := newStore(t)
	a1, a2, ac := digestOf("x1"), digestOf("x2"), digestOf("xc")
	var limit int64
	for i, d := range []string{a1, a2, ac} {
		m := gcContent(t, s, "a", d, gcBase.Add(time.Duration(i)*time.Hour), 20)
		if d == a2 {
			in, err := s.Stat(context.Background(), contentPrefix("a", d)+metaFile)
			if err != nil {
				t.Fatal(err)
			}
			limit = m.Size + m.IndexSize + m.GraphQLSize + in.Size // room for a2 alone
		}
	}
	publish(t, s, "a", ac, gcBase)
	rep := gcRunT(t, s, GCOptions{MaxInactiveBytes: limit, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 1 || r["a "+a1] != GCOverSize || rep.InactiveBytes != limit {
		t.Fatalf("deleted %v, inactive %d bytes; want a1 over the cap, %d", r, rep.InactiveBytes, limit)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("cap met, but problems %q", rep.Problems)
	}
}

// readMeta accepts a meta.json only when it describes this catalog and
// digest with sizes in range; the bounds themselves are in range. A
// meta.json of exactly maxSmall bytes is read whole.
func TestMetaBounds(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	good := Meta{Format: metaFormat, Name: "c", Digest: digest, Size: 0, Objects: 0, IndexSize: indexHeader + 4}
	for _, tc := range []struct {
		name string
		edit func(*Meta)
		ok   bool
	}{
		{"smallest", func(*Meta) {}, true},
		{"largest index", func(m *Meta) { m.IndexSize = maxIndex }, true},
		{"another digest", func(m *Meta) { m.Digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222" }, false},
		{"another catalog", func(m *Meta) { m.Name = "d" }, false},
		{"negative size", func(m *Meta) { m.Size = -1 }, false},
		{"negative objects", func(m *Meta) { m.Objects = -1 }, false},
		{"index too small", func(m *Meta) { m.IndexSize = indexHeader + 3 }, false},
		{"index too large", func(m *Meta) { m.IndexSize = maxIndex + 1 }, false},
	} {
		m := good
		tc.edit(&m)
		b, _ := json.Marshal(m)
		if _, err := st.Put(ctx, contentPrefix("c", digest)+metaFile, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := HasContent(ctx, st, "c", digest); err != nil || ok != tc.ok {
			t.Errorf("%s: complete %v (%v), want %v", tc.name, ok, err, tc.ok)
		}
	}
	b, _ := json.Marshal(good)
	for _, size := range []int{maxSmall, maxSmall + 1} {
		padded := append(bytes.Clone(b), bytes.Repeat([]byte(" "), size-len(b))...)
		if _, err := st.Put(ctx, contentPrefix("c", digest)+metaFile, bytes.NewReader(padded)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := HasContent(ctx, st, "c", digest); err != nil || ok != (size == maxSmall) {
			t.Errorf("meta.json of %d bytes: complete %v (%v)", size, ok, err)
		}
	}
}

// MarkConfigured writes the mark of every listed catalog and refuses a
// bad name.
func TestMarkConfiguredWrites(t *testing.T) {
	ctx := context.Background()
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := MarkConfigured(ctx, st, []string{"a", "b"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := st.Stat(ctx, catalogPrefix(n)+configuredFile); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := MarkConfigured(ctx, st, []string{"../x"}, time.Hour); err == nil {
		t.Error("a bad name was marked")
	}
}

// failingIndex fails reads of index objects partway with a store error.
type failingIndex struct{ storage.Store }

func (f failingIndex) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := f.Store.Get(ctx, key, off, n)
	if err != nil || !strings.HasSuffix(key, "/"+indexFile) {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, 8), iotest.ErrReader(errStoreRead)), rc}, nil
}

var errStoreRead = errors.New("connection reset by peer")

// An index the store fails to deliver is that failure (retry), not
// corrupt content (which would be written again).
func TestIndexReadFailureIsNotCorrupt(t *testing.T) {
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	writeCatalog(t, st, "c", digest, []obj{{"olm.package", "", "p", []byte(`{"schema":"olm.package","name":"p"}` + "\n")}})
	_, err = OpenDigest(context.Background(), failingIndex{st}, "c", digest)
	if !errors.Is(err, errStoreRead) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("%v, want the store's read error, not corrupt content", err)
	}
}

// A zombie (exited, not yet reaped) is no live process; this process is.
func TestProcessAliveZombie(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Wait() //nolint:errcheck // reaped at the end; the zombie is the point
	pid := cmd.Process.Pid
	zombie := false
	for range 2000 { // bounded: the child exits at once
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil && bytes.Contains(b, []byte(") Z ")) {
			zombie = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !zombie {
		t.Skip("the child never showed as a zombie")
	}
	if processAlive(pid) {
		t.Fatal("a zombie counted as alive")
	}
}

// A holder of the same host whose PID is unknown (0) is never taken for
// exited.
func TestOutlivedUnknownPID(t *testing.T) {
	h := LeaseHolder{Replica: "r", Instance: "me", Host: "host-1", PID: os.Getpid()}
	if h.outlived(LeaseHolder{Replica: "r", Instance: "other", Host: "host-1", PID: 0}) {
		t.Fatal("a holder with PID 0 was taken for exited")
	}
}

// A live process is alive whatever its name: the state is read after
// the last ")" of the command name, never inside it.
func TestProcessAliveOddName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	for _, name := range []string{"aXb", "a) Z", "Xy"} {
		link := filepath.Join(t.TempDir(), name)
		if err := os.Symlink(sleep, link); err != nil {
			t.Skip(err)
		}
		cmd := exec.Command(link, "30")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		alive := processAlive(cmd.Process.Pid)
		cmd.Process.Kill() //nolint:errcheck // test cleanup
		cmd.Wait()         //nolint:errcheck // killed on purpose
		if !alive {
			t.Errorf("a live process named %q counted as exited", name)
		}
	}
}
