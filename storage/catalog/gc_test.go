package catalog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/servers"
)

// gcBackend makes a fresh empty store of one kind.
type gcBackend struct {
	name  string
	store func(t *testing.T) storage.Store
}

// gcBackends are the filesystem and a real MinIO, one bucket per store;
// admin reaches the MinIO outside any Store.
func gcBackends(t *testing.T) (backends []gcBackend, admin *awss3.Client) {
	m := servers.StartMinIO(t)
	admin = awss3.New(awss3.Options{
		Region: m.Region, BaseEndpoint: aws.String(m.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, ""),
	})
	return []gcBackend{
		{"fs", func(t *testing.T) storage.Store { return newStore(t) }},
		{"s3", func(t *testing.T) storage.Store {
			var b [6]byte
			rand.Read(b[:])
			bucket := "gc-" + hex.EncodeToString(b[:])
			if _, err := admin.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			s, err := s3.New(context.Background(), s3.Config{
				Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
				AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey,
			})
			if err != nil {
				t.Fatal(err)
			}
			gcBucketOf[s] = bucket
			return s
		}},
	}, admin
}

// gcBucketOf remembers the bucket of each S3 store the tests made.
var gcBucketOf = map[*s3.Store]string{}

func TestGC(t *testing.T) {
	tests := []struct {
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
		{"Shared", testGCShared},
		{"StaticLayout", testGCStaticLayout},
	}
	backends, _ := gcBackends(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.store(t)) })
			}
		})
	}
}

var gcBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// gcContent writes a catalog of n lines of about 100 bytes each whose
// meta.json says it was created at created.
func gcContent(t *testing.T, s storage.Store, name, digest string, created time.Time, n int) Meta {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(ctx, s, name, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range n {
		line := fmt.Appendf(nil, `{"schema":"olm.bundle","package":"p","name":"b%d","pad":%q}`+"\n", i, strings.Repeat("x", 50))
		if err := w.Add("olm.bundle", "p", fmt.Sprintf("b%d", i), line); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Commit(ctx, Meta{Ref: "example.com/c:latest", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// gcHistory writes digests 0..n-1 of name with Created one hour apart and
// publishes each in turn: the last is current.
func gcHistory(t *testing.T, s storage.Store, name string, n int) []string {
	t.Helper()
	var ds []string
	for i := range n {
		d := digestOf(name + fmt.Sprint(i))
		gcContent(t, s, name, d, gcBase.Add(time.Duration(i)*time.Hour), 10+i)
		publish(t, s, name, d, gcBase.Add(time.Duration(i)*time.Hour))
		ds = append(ds, d)
	}
	return ds
}

func gcRunT(t *testing.T, s storage.Store, o GCOptions) GCReport {
	t.Helper()
	rep, err := GC(context.Background(), s, o)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	return rep
}

// gcAfterGrace is a GCOptions.Now two days ahead: everything is out of
// grace.
func gcAfterGrace() time.Time { return time.Now().Add(48 * time.Hour) }

// gcDigestsIn lists which of ds have any object stored.
func gcDigestsIn(t *testing.T, s storage.Store, name string, ds []string) []string {
	t.Helper()
	var out []string
	for _, d := range ds {
		list, err := s.List(context.Background(), contentPrefix(name, d))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func gcReasons(items []GCItem) map[string]GCReason {
	m := map[string]GCReason{}
	for _, it := range items {
		m[it.Catalog+" "+it.Digest] = it.Reason
	}
	return m
}

// gcCheckServes asserts name's published catalog opens and reads whole.
func gcCheckServes(t *testing.T, s storage.Store, name string) {
	t.Helper()
	c, err := Open(context.Background(), s, name)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	if b := readAll(t, c); int64(len(b)) != c.Meta.Size || sha256Hex(b) != c.Meta.SHA256 {
		t.Fatalf("%s: read %d bytes not matching meta", name, len(b))
	}
}

func testGCKeepNewest(t *testing.T, s storage.Store) {
	ds := gcHistory(t, s, "a", 6)
	// Recency is meta's Created, not the order of writing: the newest
	// non-current content here is written first.
	late := digestOf("late")
	gcContent(t, s, "a", late, gcBase.Add(4*time.Hour+30*time.Minute), 3)
	all := append(slices.Clone(ds), late)

	rep := gcRunT(t, s, GCOptions{Now: gcAfterGrace})
	want := []string{ds[4], ds[5], late}
	if got := gcDigestsIn(t, s, "a", all); !gcSameSet(got, want) {
		t.Fatalf("kept %v, want current %s and the two newest %v", got, ds[5], []string{late, ds[4]})
	}
	r := gcReasons(rep.Deleted)
	for _, d := range ds[:4] {
		if r["a "+d] != GCOld {
			t.Errorf("%s deleted for %q, want %q", d, r["a "+d], GCOld)
		}
	}
	if k := gcReasons(rep.Kept); k["a "+ds[5]] != GCCurrent || k["a "+late] != GCRecent || k["a "+ds[4]] != GCRecent {
		t.Errorf("kept reasons %v", k)
	}
	if len(rep.Deleted) != 4 || rep.DeletedBytes <= 0 || rep.InactiveBytes <= 0 {
		t.Errorf("report %+v", rep)
	}
	for _, it := range rep.Deleted {
		if len(it.Keys) != 4 || it.Bytes <= 0 {
			t.Errorf("deleted item %+v", it)
		}
	}
	gcCheckServes(t, s, "a")
	if _, err := OpenDigest(context.Background(), s, "a", late); err != nil {
		t.Errorf("kept content unusable: %v", err)
	}

	// Keep < 0 keeps only the current content.
	gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace})
	if got := gcDigestsIn(t, s, "a", all); !slices.Equal(got, []string{ds[5]}) {
		t.Fatalf("Keep -1 left %v", got)
	}
	gcCheckServes(t, s, "a")
}

func gcSameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func testGCGraceFromLastSwap(t *testing.T, s storage.Store) {
	ctx := context.Background()
	d0, d1 := digestOf("g0"), digestOf("g1")
	gcContent(t, s, "g", d0, gcBase, 5)
	gcContent(t, s, "g", d1, gcBase.Add(time.Hour), 5)
	publish(t, s, "g", d0, gcBase)
	// List, not Stat: S3's HEAD gives whole seconds, its listing ms.
	listed := func(key string) storage.Info {
		l, err := s.List(ctx, key)
		if err != nil || len(l) != 1 {
			t.Fatalf("List(%s) = %v, %v", key, l, err)
		}
		return l[0]
	}
	meta0 := listed(contentPrefix("g", d0) + metaFile)
	// The swap to d1 happens well after d0 was last written: d0 was
	// reachable until the swap, so the grace period runs from there. The
	// store's clock says when d0 was written; a tenth of a second more
	// covers a coarse file-system clock.
	time.Sleep(time.Until(meta0.ModTime.Add(1100 * time.Millisecond)))
	publish(t, s, "g", d1, gcBase.Add(time.Hour))
	ptr := listed(catalogPrefix("g") + currentFile)
	if ptr.ModTime.Sub(meta0.ModTime) < time.Second {
		t.Fatalf("swap %v not a second after content %v", ptr.ModTime, meta0.ModTime)
	}
	const grace = time.Second
	at := func(d time.Duration) func() time.Time { return func() time.Time { return ptr.ModTime.Add(d) } }

	// Out of grace counted from d0's own write, not from the swap.
	rep := gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, Now: at(grace / 2)})
	if r := gcReasons(rep.Kept)["g "+d0]; r != GCInGrace {
		t.Fatalf("d0 %q, want kept in grace; report %+v", r, rep)
	}
	if it := rep.Kept[slices.IndexFunc(rep.Kept, func(it GCItem) bool { return it.Digest == d0 })]; !it.InactiveSince.Equal(ptr.ModTime) {
		t.Errorf("inactive since %v, want the swap at %v", it.InactiveSince, ptr.ModTime)
	}
	if got := gcDigestsIn(t, s, "g", []string{d0, d1}); len(got) != 2 {
		t.Fatalf("deleted within grace: %v left", got)
	}
	rep = gcRunT(t, s, GCOptions{Keep: -1, Grace: grace, Now: at(grace + 10*time.Millisecond)})
	if r := gcReasons(rep.Deleted)["g "+d0]; r != GCOld {
		t.Fatalf("d0 %q, want deleted; report %+v", r, rep)
	}
	if got := gcDigestsIn(t, s, "g", []string{d0, d1}); !slices.Equal(got, []string{d1}) {
		t.Fatalf("left %v", got)
	}
	gcCheckServes(t, s, "g")

	// The default grace is an hour.
	d2 := digestOf("g2")
	gcContent(t, s, "g", d2, gcBase.Add(2*time.Hour), 5)
	publish(t, s, "g", d2, gcBase.Add(2*time.Hour))
	gcRunT(t, s, GCOptions{Keep: -1, Now: func() time.Time { return time.Now().Add(50 * time.Minute) }})
	if got := gcDigestsIn(t, s, "g", []string{d1, d2}); len(got) != 2 {
		t.Fatalf("default grace: left %v", got)
	}
	gcRunT(t, s, GCOptions{Keep: -1, Now: func() time.Time { return time.Now().Add(70 * time.Minute) }})
	if got := gcDigestsIn(t, s, "g", []string{d1, d2}); !slices.Equal(got, []string{d2}) {
		t.Fatalf("after default grace: left %v", got)
	}
}

func testGCLRUBySize(t *testing.T, s storage.Store) {
	// Created interleaves the two catalogs: a1 < b1 < a2 < b2 < currents.
	a1, a2, ac := digestOf("a1"), digestOf("a2"), digestOf("ac")
	b1, b2, bc := digestOf("b1"), digestOf("b2"), digestOf("bc")
	size := map[string]int64{}
	for i, x := range []struct{ name, d string }{{"a", a1}, {"b", b1}, {"a", a2}, {"b", b2}, {"a", ac}, {"b", bc}} {
		m := gcContent(t, s, x.name, x.d, gcBase.Add(time.Duration(i)*time.Hour), 20)
		size[x.d] = m.Size + m.IndexSize + m.GraphQLSize
	}
	publish(t, s, "a", ac, gcBase)
	publish(t, s, "b", bc, gcBase)
	all := map[string][]string{"a": {a1, a2, ac}, "b": {b1, b2, bc}}
	metaSize := func(name, d string) int64 {
		in, err := s.Stat(context.Background(), contentPrefix(name, d)+metaFile)
		if err != nil {
			t.Fatal(err)
		}
		return in.Size
	}
	// Room for exactly the two most recent inactive digests.
	limit := size[a2] + metaSize("a", a2) + size[b2] + metaSize("b", b2)

	// Within grace nothing goes, and GC says the cap is not met.
	rep := gcRunT(t, s, GCOptions{MaxInactiveBytes: limit})
	if len(rep.Deleted) != 0 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "over the cap") {
		t.Fatalf("within grace: deleted %v, problems %q", rep.Deleted, rep.Problems)
	}
	rep = gcRunT(t, s, GCOptions{MaxInactiveBytes: limit, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 2 || r["a "+a1] != GCOverSize || r["b "+b1] != GCOverSize {
		t.Fatalf("deleted %v, want a1 and b1 over the size cap", r)
	}
	if rep.InactiveBytes != limit {
		t.Errorf("inactive bytes %d, want %d", rep.InactiveBytes, limit)
	}
	for name, ds := range all {
		if got := gcDigestsIn(t, s, name, ds); !slices.Equal(got, ds[1:]) {
			t.Errorf("%s: left %v, want %v", name, got, ds[1:])
		}
		gcCheckServes(t, s, name)
	}
	// One byte less and the next least recent (a2) goes as well.
	rep = gcRunT(t, s, GCOptions{MaxInactiveBytes: limit - 1, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 1 || r["a "+a2] != GCOverSize {
		t.Fatalf("deleted %v, want a2", r)
	}
}

func testGCRemovedCatalogs(t *testing.T, s storage.Store) {
	ctx := context.Background()
	gcHistory(t, s, "keep", 2)
	gcHistory(t, s, "gone", 3)
	gcHistory(t, s, "gone-too", 1)
	// Polled, never published: a catalog all the same.
	if err := RecordPoll(ctx, s, "polled", Poll{Ref: "example.com/x:1"}); err != nil {
		t.Fatal(err)
	}
	count := func(name string) int {
		l, err := s.List(ctx, catalogPrefix(name))
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}

	// No configured set: no catalog is deleted.
	gcRunT(t, s, GCOptions{Now: gcAfterGrace})
	for _, n := range []string{"keep", "gone", "gone-too", "polled"} {
		if count(n) == 0 {
			t.Fatalf("%s deleted without a configured set", n)
		}
	}
	// An empty list says nothing about what is wanted: nothing goes.
	rep := gcRunT(t, s, GCOptions{Catalogs: []string{}, Now: gcAfterGrace})
	for _, n := range []string{"keep", "gone", "gone-too", "polled"} {
		if count(n) == 0 || len(rep.Problems) != 1 {
			t.Fatalf("%s deleted with an empty configured set (problems %q)", n, rep.Problems)
		}
	}
	// Recently written: kept through the grace period.
	rep = gcRunT(t, s, GCOptions{Catalogs: []string{"keep"}})
	if r := gcReasons(rep.Kept); r["gone "] != GCRecentlyUsed || count("gone") == 0 {
		t.Fatalf("removed catalog within grace: %v", r)
	}
	// Past the grace period but touched within the unconfigured age, as
	// during a rolling update whose new replicas list other catalogs:
	// kept.
	twoHours := func() time.Time { return time.Now().Add(2 * time.Hour) }
	rep = gcRunT(t, s, GCOptions{Catalogs: []string{"keep"}, Grace: time.Minute, Now: twoHours})
	if r := gcReasons(rep.Kept); r["gone "] != GCRecentlyUsed || count("gone") == 0 {
		t.Fatalf("removed catalog past grace, within the unconfigured age: %v", r)
	}
	rep = gcRunT(t, s, GCOptions{Catalogs: []string{"keep"}, Grace: time.Minute, UnconfiguredAge: time.Hour, Now: twoHours, DryRun: true})
	if r := gcReasons(rep.Deleted); r["gone "] != GCRemovedCatalog {
		t.Fatalf("UnconfiguredAge of an hour, untouched for two: %v", r)
	}
	rep = gcRunT(t, s, GCOptions{Catalogs: []string{"keep"}, Now: gcAfterGrace})
	r := gcReasons(rep.Deleted)
	for _, n := range []string{"gone", "gone-too", "polled"} {
		if r[n+" "] != GCRemovedCatalog || count(n) != 0 {
			t.Errorf("%s: reason %q, %d objects left", n, r[n+" "], count(n))
		}
		if _, _, err := Current(ctx, s, n); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("%s: pointer %v", n, err)
		}
	}
	gcCheckServes(t, s, "keep")
	if count("keep") != 1+2*4 {
		t.Errorf("keep has %d objects, want pointer and two digests", count("keep"))
	}
}

func testGCIncomplete(t *testing.T, s storage.Store) {
	ctx := context.Background()
	cur := digestOf("cur")
	gcContent(t, s, "inc", cur, gcBase, 5)
	publish(t, s, "inc", cur, gcBase)
	// A writer that died after catalog.jsonl and the index.
	dead := digestOf("dead")
	for _, f := range []string{contentFile, indexFile} {
		if _, err := s.Put(ctx, contentPrefix("inc", dead)+f, strings.NewReader("partial")); err != nil {
			t.Fatal(err)
		}
	}
	// A meta.json that does not parse counts as incomplete, as for
	// HasContent; one of a future format is left alone.
	garbled, future := digestOf("garbled"), digestOf("future")
	gcContent(t, s, "inc", garbled, gcBase.Add(-time.Hour), 2)
	gcContent(t, s, "inc", future, gcBase.Add(-2*time.Hour), 2)
	if _, err := s.Put(ctx, contentPrefix("inc", garbled)+metaFile, strings.NewReader("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, contentPrefix("inc", future)+metaFile, strings.NewReader(`{"format":99}`)); err != nil {
		t.Fatal(err)
	}
	all := []string{cur, dead, garbled, future}

	rep := gcRunT(t, s, GCOptions{Keep: -1})
	if k := gcReasons(rep.Kept); k["inc "+dead] != GCWriting || k["inc "+garbled] != GCWriting {
		t.Fatalf("incomplete content within grace: kept %v", k)
	}
	rep = gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 2 || r["inc "+dead] != GCIncomplete || r["inc "+garbled] != GCIncomplete {
		t.Fatalf("deleted %v", r)
	}
	if k := gcReasons(rep.Kept); k["inc "+future] != GCUnknownFormat {
		t.Errorf("kept %v", k)
	}
	if got := gcDigestsIn(t, s, "inc", all); !gcSameSet(got, []string{cur, future}) {
		t.Fatalf("left %v", got)
	}
	gcCheckServes(t, s, "inc")
}

func testGCDryRun(t *testing.T, s storage.Store) {
	ctx := context.Background()
	gcHistory(t, s, "dry", 5)
	gcHistory(t, s, "other", 1)
	before, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	opts := GCOptions{Keep: 1, Catalogs: []string{"dry"}, Now: gcAfterGrace, DryRun: true}
	dry := gcRunT(t, s, opts)
	after, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gcKeys(before), gcKeys(after)) {
		t.Fatalf("dry run changed the store:\n%q\n%q", gcKeys(before), gcKeys(after))
	}
	if !dry.DryRun || len(dry.Deleted) != 4 {
		t.Fatalf("dry run report: %+v", dry)
	}
	opts.DryRun = false
	real := gcRunT(t, s, opts)
	if real.DryRun || !slices.EqualFunc(dry.Deleted, real.Deleted, func(a, b GCItem) bool {
		return a.Catalog == b.Catalog && a.Digest == b.Digest && a.Reason == b.Reason && a.Bytes == b.Bytes && slices.Equal(a.Keys, b.Keys)
	}) {
		t.Fatalf("dry run said %+v, the real run did %+v", dry.Deleted, real.Deleted)
	}
	if real.DeletedBytes != dry.DeletedBytes || real.KeptBytes != dry.KeptBytes {
		t.Errorf("bytes: dry %d/%d, real %d/%d", dry.DeletedBytes, dry.KeptBytes, real.DeletedBytes, real.KeptBytes)
	}
	left, _ := s.List(ctx, "")
	var deleted int
	for _, it := range real.Deleted {
		deleted += len(it.Keys)
	}
	if len(left) != len(before)-deleted {
		t.Errorf("%d objects left of %d, %d deleted", len(left), len(before), deleted)
	}
}

// gcRepublishingStore swaps the pointer to the content whose file named
// after is being deleted, right after the delete: a publisher that
// checked the content just before GC deleted it (Publish itself would
// refuse after a meta.json delete). at is the new pointer's ResolvedAt.
type gcRepublishingStore struct {
	storage.Store
	t     *testing.T
	name  string
	after string
	at    time.Time
	done  bool
}

func (r *gcRepublishingStore) Delete(ctx context.Context, key string) error {
	if err := r.Store.Delete(ctx, key); err != nil {
		return err
	}
	if !r.done && strings.HasSuffix(key, "/"+r.after) {
		r.done = true
		dir := strings.TrimSuffix(strings.TrimPrefix(key, catalogPrefix(r.name)), "/"+r.after)
		b, _ := json.Marshal(Pointer{Digest: gcDirDigest(dir), Ref: "example.com/c:latest", ResolvedAt: r.at})
		cur, err := r.Store.Stat(ctx, catalogPrefix(r.name)+currentFile)
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := r.Store.PutIf(ctx, catalogPrefix(r.name)+currentFile, b, cur.ETag); err != nil {
			r.t.Fatal(err)
		}
	}
	return nil
}

func testGCRepublished(t *testing.T, s storage.Store) {
	ds := gcHistory(t, s, "back", 2)
	rs := &gcRepublishingStore{Store: s, t: t, name: "back", after: metaFile, at: gcBase.Add(time.Hour)}
	rep := gcRunT(t, rs, GCOptions{Keep: -1, Now: gcAfterGrace})
	if !rs.done {
		t.Fatal("GC deleted no meta.json")
	}
	if r := gcReasons(rep.Kept)["back "+ds[0]]; r != GCRepublished {
		t.Fatalf("%s: %q, want kept as republished; report %+v", ds[0], r, rep)
	}
	ptr, _, err := Current(context.Background(), s, "back")
	if err != nil || ptr.Digest != ds[0] {
		t.Fatalf("pointer %v %v", ptr, err)
	}
	gcCheckServes(t, s, "back")
}

// gcListHookStore runs hook once, right after the first List.
type gcListHookStore struct {
	storage.Store
	hook func()
}

func (l *gcListHookStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	out, err := l.Store.List(ctx, prefix)
	if l.hook != nil {
		l.hook()
		l.hook = nil
	}
	return out, err
}

// A pointer set between GC's listing and its planning is seen: the
// digest it names is current, and the one it replaced was current a
// moment ago.
func testGCPublishedAfterListing(t *testing.T, s storage.Store) {
	ds := gcHistory(t, s, "late", 1)
	// Complete but never published, then published behind GC's back.
	d := digestOf("late published")
	gcContent(t, s, "late", d, gcBase.Add(-time.Hour), 3)
	hs := &gcListHookStore{Store: s, hook: func() { publish(t, s, "late", d, gcBase.Add(time.Hour)) }}
	rep := gcRunT(t, hs, GCOptions{Keep: -1, Grace: time.Hour})
	k := gcReasons(rep.Kept)
	if k["late "+d] != GCCurrent || k["late "+ds[0]] != GCInGrace || len(rep.Deleted) != 0 {
		t.Fatalf("kept %v, deleted %v", k, rep.Deleted)
	}
	gcCheckServes(t, s, "late")
}

func testGCLeavesUnknown(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ds := gcHistory(t, s, "x", 1)
	foreign := []string{"catalogs/README", "catalogs/Not_A_Name/sha256-00/y", "catalogs/x/notes/a", "catalogs/x/sha256-short/b", "elsewhere/z"}
	for _, k := range foreign {
		if _, err := s.Put(ctx, k, strings.NewReader("mine")); err != nil {
			t.Fatal(err)
		}
	}
	// A pointer that does not parse: nothing of its catalog is touched.
	gcHistory(t, s, "broken", 3)
	if _, err := s.Put(ctx, catalogPrefix("broken")+currentFile, strings.NewReader("{garbage")); err != nil {
		t.Fatal(err)
	}
	rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace, Catalogs: []string{"x", "broken"}})
	if len(rep.Deleted) != 0 {
		t.Fatalf("deleted %+v", rep.Deleted)
	}
	if len(rep.Problems) != 2 || !strings.Contains(strings.Join(rep.Problems, "\n"), "Not_A_Name") ||
		!strings.Contains(strings.Join(rep.Problems, "\n"), "broken: unreadable pointer") {
		t.Errorf("problems %q", rep.Problems)
	}
	for _, k := range foreign {
		if _, err := s.Stat(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if got := gcDigestsIn(t, s, "broken", []string{digestOf("broken0"), digestOf("broken1"), digestOf("broken2")}); len(got) != 3 {
		t.Errorf("broken catalog lost content: %v", got)
	}
	gcCheckServes(t, s, "x")
	if got := gcDigestsIn(t, s, "x", ds); len(got) != 1 {
		t.Errorf("x lost its current content")
	}
}

// gcLeftoverStore is an fs store under root whose catalog "l" has one
// digest, stored in dir: where that digest's interrupted writes lie.
func gcLeftoverStore(t *testing.T) (s storage.Store, root, dir string) {
	t.Helper()
	root = t.TempDir()
	st, err := fs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ds := gcHistory(t, st, "l", 1)
	return st, root, filepath.Join(root, "catalogs", "l", strings.Replace(ds[0], ":", "-", 1))
}

// Interrupted writes of both backends go once older than LeftoverAge.
func TestGCLeftovers(t *testing.T) {
	backends, admin := gcBackends(t)
	t.Run("fs", func(t *testing.T) {
		s, root, dir := gcLeftoverStore(t)
		tmp := filepath.Join(dir, ".tmp-0123456789abcdef")
		if err := os.WriteFile(tmp, make([]byte, 4321), 0o644); err != nil {
			t.Fatal(err)
		}
		// Another user's temp file outside catalogs/ is not GC's.
		foreign := filepath.Join(root, "other", ".tmp-fedcba9876543210")
		if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(foreign, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * time.Hour)
		for _, p := range []string{tmp, foreign} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		if rep := gcRunT(t, s, GCOptions{}); len(rep.Deleted) != 0 {
			t.Fatalf("two-hour-old temp file gone with the one-day default: %+v", rep.Deleted)
		}
		rep := gcRunT(t, s, GCOptions{LeftoverAge: time.Hour, DryRun: true})
		if len(rep.Deleted) != 1 || rep.Deleted[0].Bytes != 4321 || rep.Deleted[0].Catalog != "l" {
			t.Fatalf("dry run: %+v", rep.Deleted)
		}
		if _, err := os.Stat(tmp); err != nil {
			t.Fatal("dry run removed the temp file")
		}
		gcRunT(t, s, GCOptions{LeftoverAge: time.Hour})
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("temp file still there: %v", err)
		}
		if _, err := os.Stat(foreign); err != nil {
			t.Fatalf("temp file outside catalogs/ removed: %v", err)
		}
		gcCheckServes(t, s, "l")
	})
	t.Run("s3", func(t *testing.T) {
		s := backends[1].store(t).(*s3.Store)
		ds := gcHistory(t, s, "l", 1)
		key := contentPrefix("l", ds[0]) + contentFile
		// A Put whose abort could not reach the server (see the sync
		// package's fault test) leaves such an upload; one begun by
		// hand is the same to the server.
		ctx := context.Background()
		bucket := aws.String(gcBucketOf[s])
		up, err := admin.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = admin.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: aws.String(key),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 5<<20))})
		if err != nil {
			t.Fatal(err)
		}
		rep := gcRunT(t, s, GCOptions{LeftoverAge: time.Hour})
		if len(rep.Deleted) != 0 {
			t.Fatalf("young upload aborted: %+v", rep.Deleted)
		}
		rep = gcRunT(t, s, GCOptions{LeftoverAge: -1})
		if len(rep.Deleted) != 1 || rep.Deleted[0].Reason != GCLeftover || rep.Deleted[0].Keys[0] != key || rep.Deleted[0].Bytes != 5<<20 {
			t.Fatalf("deleted %+v", rep.Deleted)
		}
		if ups, err := s.StaleUploads(context.Background(), "catalogs/", -1, key); err != nil || len(ups) != 0 {
			t.Fatalf("uploads after: %v %v", ups, err)
		}
		gcCheckServes(t, s, "l")
	})
}

// TestGCOnFilesystemStore runs TestGC's cases on the filesystem store
// under -short, where TestGC skips (it needs MinIO for its other backend):
// without it GC has no -short test at all.
func TestGCOnFilesystemStore(t *testing.T) {
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
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own store
			tc.fn(t, newStore(t))
		})
	}
}

// GCOptions' zero values mean the defaults, negative ones none, positive
// ones themselves; the unconfigured age is never below the grace period.
// An empty catalog list deletes nothing and says so; no list says nothing.
// Unlike TestGCOnFilesystemStore's cases this runs without -short too. Catches any of
// these cases inverted (== 0, > 0, < 0, the list's nil and length tests).
func TestGCOptionsResolve(t *testing.T) {
	const h = time.Hour
	for _, tc := range []struct {
		o                   GCOptions
		grace, unconfigured time.Duration
		keep                int
	}{
		{GCOptions{}, DefaultGrace, DefaultUnconfiguredAge, DefaultKeep},
		{GCOptions{Grace: 3 * h, UnconfiguredAge: 5 * h, Keep: 3}, 3 * h, 5 * h, 3},
		{GCOptions{Grace: 3 * h, UnconfiguredAge: 2 * h, Keep: 1}, 3 * h, 3 * h, 1},
		{GCOptions{Grace: -1, UnconfiguredAge: -1, Keep: -1}, 0, 0, 0},
		{GCOptions{Grace: 30 * time.Minute, UnconfiguredAge: -1}, 30 * time.Minute, 30 * time.Minute, DefaultKeep},
	} {
		r := newGCRun(nil, tc.o)
		if r.grace != tc.grace || r.unconfigured != tc.unconfigured || r.keepNewest != tc.keep {
			t.Errorf("%+v: grace %v, unconfigured %v, keep %d; want %v, %v, %d",
				tc.o, r.grace, r.unconfigured, r.keepNewest, tc.grace, tc.unconfigured, tc.keep)
		}
	}
	for _, tc := range []struct {
		list     []string
		set      map[string]bool
		problems int
	}{
		{nil, nil, 0},
		{[]string{}, nil, 1},
		{[]string{"a", "b"}, map[string]bool{"a": true, "b": true}, 0},
	} {
		r := newGCRun(nil, GCOptions{Catalogs: tc.list})
		set := r.configured()
		if (set == nil) != (tc.set == nil) || len(set) != len(tc.set) || len(r.rep.Problems) != tc.problems {
			t.Errorf("list %#v: set %v, problems %q; want %v and %d problems", tc.list, set, r.rep.Problems, tc.set, tc.problems)
		}
		for n := range tc.set {
			if !set[n] {
				t.Errorf("list %#v: %s not in the set %v", tc.list, n, set)
			}
		}
	}
}
