package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	fsstore "github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// Settings of TestIncrementalRandomChanges.
const (
	randomChangesEnv = "CATALOGSYNC_BENCH_RANDOM_CHANGES" // how many changes; the test skips without
	randomSeedEnv    = "CATALOGSYNC_BENCH_RANDOM_SEED"    // default 1
	randomCatalogEnv = "CATALOGSYNC_BENCH_RANDOM_CATALOG" // default generated-x16
)

// rebuildEvery: change i is pushed as one rebuilt layer when i%rebuildEvery
// is rebuildAt, else as a small layer on top of v1's.
const rebuildEvery, rebuildAt = 10, 4

// TestIncrementalRandomChanges proves incremental sync byte-exact: a
// catalog (generated-x16 unless randomCatalogEnv names another) evolves by
// N changes, each to one package picked by a seeded RNG (a new bundle or a
// changed createdAt, alternately; changes accumulate). After each, the new
// image is synced incrementally (with verifyEnv=1, so the sync itself also
// compares the reused files' parse) into the store that holds the previous
// version, and in full into a fresh store; the two contents must be
// byte-identical (catalog.jsonl, index, graphql-schema.json) and meta.json
// must agree on everything but its time and stats.
//
// Most images are v1's layer plus one layer holding the changed files;
// every tenth is one layer rebuilt whole.
//
//	CATALOGSYNC_BENCH_RANDOM_CHANGES=100 go test -run TestIncrementalRandomChanges -v -timeout 3h ./bench
func TestIncrementalRandomChanges(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(randomChangesEnv))
	if err != nil || n < 1 {
		t.Skipf("set %s=N to sync N random one-package changes incrementally and in full and compare", randomChangesEnv)
	}
	seed := uint64(1)
	if s := os.Getenv(randomSeedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", randomSeedEnv, err)
		}
	}
	name := cmp.Or(os.Getenv(randomCatalogEnv), "generated-x16")
	if msg := sharedMissing(); msg != "" && specOf(name).shared {
		t.Skip(msg)
	}
	f := setup(t)
	v1 := f.image(t, name)
	r := newRandomRun(t, f, name, v1, seed)
	incr := f.freshStore(t, "fs", "")
	defer f.drop(t, incr)
	first := f.sync(t, v1.ref, incr)
	r.prev = contentSum(t, incr.dir, summaryDigest(t, first.stdout))
	var reused, files, diffs, odd, shared int
	for i := range n {
		res := r.step(i, incr)
		diffs += len(res.diffs)
		reused, files = reused+res.reused, files+res.files
		// Successive images differ in one file: the rest can be reused.
		if res.files > 0 && res.reused != res.files-1 {
			odd++
		}
		if res.extents > 0 {
			shared++
		}
		t.Logf("change %d: %s; %d of %d files reused, %d extents, %d differences %v", i+1, res.what, res.reused, res.files, res.extents, len(res.diffs), res.diffs)
	}
	t.Logf("%s, seed %d: %d incremental syncs compared with full ones, %d differences; %d of %d files reused; %d syncs reused other than all files but the changed one; %d shared lines with earlier content, %d wrote catalog.jsonl whole",
		name, seed, n, diffs, reused, files, odd, shared, n-shared)
	if reused == 0 {
		t.Logf("no file was reused: this catalogsync has no incremental sync, so full syncs were compared with full syncs")
	}
	if diffs > 0 {
		t.Fatalf("%d differences between incremental and full syncs", diffs)
	}
}

// stepResult is what one change showed.
type stepResult struct {
	what          string
	files, reused int
	diffs         []string
	extents       int // of the incremental content: 0 when written whole
}

// step makes change i, syncs the image incrementally into incr (checked
// by the sync itself too) and in full into a fresh store, and compares.
func (r *randomRun) step(i int, incr store) stepResult {
	t := r.t
	img, digest, what := r.next(i)
	res := stepResult{what: what}
	got, err := r.f.trySync(img, incr, verifyEnv+"=1")
	if err != nil {
		if !strings.Contains(err.Error(), "incremental check") {
			t.Fatal(err)
		}
		msg := err.Error()
		for _, l := range strings.Split(msg, "\n") {
			if strings.Contains(l, "incremental check") {
				msg = l
				break
			}
		}
		res.diffs = []string{"the sync's own check failed: " + msg}
		return res
	}
	res.files, res.reused = got.files, got.reused
	full := r.f.freshStore(t, "fs", "")
	defer r.f.drop(t, full)
	r.f.sync(t, img, full)
	res.diffs = compareContent(t, incr.dir, full.dir, digest)
	res.extents = len(metaOf(t, incr.dir, digest).Extents)
	// A change that changed nothing would prove nothing.
	sum := contentSum(t, full.dir, digest)
	if sum == r.prev {
		t.Fatalf("change %d (%s) left catalog.jsonl as it was", i+1, what)
	}
	r.prev = sum
	pruneContent(t, incr.dir)
	return res
}

// randomRun makes the successive changed images of one test.
type randomRun struct {
	t     *testing.T
	f     *fixture
	name  string
	src   string // v1's folder
	over  string // the changed files so far, by path relative to src
	base  imagebuild.PushedLayer
	files []string // the catalog's files, relative to src
	rng   *rand.Rand
	prev  string // sha256 of the last synced catalog.jsonl
}

func newRandomRun(t *testing.T, f *fixture, name string, v1 image, seed uint64) *randomRun {
	src, err := f.sourceDir(specOf(name))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := imagebuild.PushedLayers(context.Background(), f.rc, v1.ref)
	if err != nil || len(layers) != 1 {
		t.Fatalf("v1's layers: %v, %v", layers, err)
	}
	r := &randomRun{t: t, f: f, name: name, src: src, base: layers[0], rng: rand.New(rand.NewPCG(seed, 0))}
	r.over = t.TempDir()
	err = filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() && strings.HasSuffix(p, ".yaml") {
			rel, _ := filepath.Rel(src, p)
			r.files = append(r.files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil || len(r.files) == 0 {
		t.Fatalf("catalog files of %s: %d, %v", src, len(r.files), err)
	}
	return r
}

// next changes one random package and pushes the image; it returns the
// image's reference and digest and what changed.
func (r *randomRun) next(i int) (ref, digest, what string) {
	t := r.t
	rel := r.files[r.rng.IntN(len(r.files))]
	from := filepath.Join(r.src, filepath.FromSlash(rel))
	to := filepath.Join(r.over, filepath.FromSlash(rel))
	if _, err := os.Stat(to); err == nil {
		from = to // changed before: change it again
	}
	change := imagebuild.Change(i % 2)
	what, err := imagebuild.ChangePackage(from, to, change, i)
	if err != nil {
		t.Fatal(err)
	}
	ref = fmt.Sprintf("%s/bench/%s:random-%d", r.f.registry.Host, r.name, i+1) // v1's repository: its layer is there
	img := imagebuild.Image{
		Layers: []imagebuild.Layer{{Pushed: &r.base}, {FromDir: r.over, DirPrefix: "/configs", Compression: imagebuild.Gzip}},
		Labels: map[string]string{imagebuild.ConfigsLabel: "/configs"},
	}
	how := "on v1's layer"
	if i%rebuildEvery == rebuildAt {
		dir := filepath.Join(t.TempDir(), "configs")
		if err := overlayTree(r.src, r.over, dir); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		img, how = imagebuild.FromDir(dir, "/configs"), "one layer"
	}
	if digest, err = imagebuild.Push(context.Background(), r.f.rc, ref, img); err != nil {
		t.Fatal(err)
	}
	return ref, digest, what + " (" + how + ")"
}

// overlayTree makes dst src's tree with over's files in place of src's.
func overlayTree(src, over, dst string) error {
	files := map[string]string{}
	err := filepath.WalkDir(over, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			rel, _ := filepath.Rel(over, p)
			files[filepath.ToSlash(rel)] = p
		}
		return err
	})
	if err != nil {
		return err
	}
	return linkTree(src, dst, files)
}

// contentFiles are compared byte for byte, catalog.jsonl as the catalog
// package reads it (shared content is made of extents), meta.json field by
// field.
var contentFiles = []string{"index", "graphql-schema.json"}

// compareContent lists how the content of digest differs between two fs
// stores of the catalog "bench", a the incremental one, b the full one.
func compareContent(t *testing.T, a, b, digest string) []string {
	t.Helper()
	key, err := catalog.ContentKey("bench", digest)
	if err != nil {
		t.Fatal(err)
	}
	dirA, dirB := filepath.Join(a, filepath.FromSlash(path.Dir(key))), filepath.Join(b, filepath.FromSlash(path.Dir(key)))
	var diffs []string
	for _, name := range contentFiles {
		ha, errA := fileSum(filepath.Join(dirA, name))
		hb, errB := fileSum(filepath.Join(dirB, name))
		if (errA == nil) != (errB == nil) || ha != hb {
			diffs = append(diffs, fmt.Sprintf("%s: incremental %s %v, full %s %v", name, ha, errA, hb, errB))
		}
	}
	sa, sb := contentSum(t, a, digest), contentSum(t, b, digest)
	if sa != sb {
		diffs = append(diffs, fmt.Sprintf("catalog.jsonl: incremental %s, full %s", sa, sb))
	}
	ma, mb := readMeta(t, dirA), readMeta(t, dirB)
	if ma.Digest != digest {
		diffs = append(diffs, fmt.Sprintf("meta.json of the incremental store is for %s", ma.Digest))
	}
	if mb.SHA256 != sb {
		diffs = append(diffs, fmt.Sprintf("meta.json sha256 %s, catalog.jsonl's is %s", mb.SHA256, sb))
	}
	// Shared content has extents instead of a sha256 of its own.
	if len(ma.Extents) > 0 && ma.SHA256 == "" {
		ma.Format, ma.SHA256, ma.Extents = mb.Format, mb.SHA256, mb.Extents
	}
	if !reflect.DeepEqual(ma, mb) {
		diffs = append(diffs, fmt.Sprintf("meta.json: incremental %+v, full %+v", ma, mb))
	}
	return diffs
}

// metaOf reads the meta.json of digest in an fs store.
func metaOf(t *testing.T, dir, digest string) catalog.Meta {
	t.Helper()
	key, err := catalog.ContentKey("bench", digest)
	if err != nil {
		t.Fatal(err)
	}
	return readMeta(t, filepath.Join(dir, filepath.FromSlash(path.Dir(key))))
}

// contentSum is the sha256 of the catalog.jsonl of digest in an fs store.
func contentSum(t *testing.T, dir, digest string) string {
	t.Helper()
	ctx := context.Background()
	st := fsStore(t, dir)
	defer st.Close()
	c, err := catalog.OpenDigest(ctx, st, "bench", digest)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func fsStore(t *testing.T, dir string) *fsstore.Store {
	t.Helper()
	st, err := fsstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// summaryDigest reads the digest from a sync's summary:
// `catalog "bench": published sha256:… (1.2s)`.
func summaryDigest(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^catalog "bench": \S+ (\S+) `).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no digest in the summary:\n%s", stdout)
	}
	return m[1]
}

// readMeta reads meta.json without the fields that differ between any
// two syncs (when, and how long it took).
func readMeta(t *testing.T, dir string) catalog.Meta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m catalog.Meta
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		t.Fatal(err)
	}
	m.Created, m.Stats = time.Time{}, nil
	return m
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// pruneContent removes the content of the fs store's catalog "bench" that
// neither is current nor shares lines with it (GC, without keeping any or
// waiting): 220 MB each when not shared.
func pruneContent(t *testing.T, dir string) {
	t.Helper()
	st := fsStore(t, dir)
	defer st.Close()
	if _, err := catalog.GC(context.Background(), st, catalog.GCOptions{Keep: -1, Grace: -1}); err != nil {
		t.Fatal(err)
	}
}
