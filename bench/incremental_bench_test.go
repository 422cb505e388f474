package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// verifyEnv makes an incremental sync also parse the files it reuses and
// compare (the sync fails on a difference). Timed syncs run without it.
const verifyEnv = "CATALOGSYNC_VERIFY_INCREMENTAL"

// incrementalCatalogs are the catalogs BenchmarkSyncIncremental changes.
var incrementalCatalogs = []string{"community-v4.21", "generated-x4", "generated-x16"}

// BenchmarkSyncIncremental syncs a catalog's second version "v2", in which
// one package's file changed (a new bundle, the head of its default
// channel: imagebuild.ChangePackage), into a store that holds the first.
// v2 is rebuilt whole, one layer like v1, as a catalog's CI does. Each
// iteration takes a fresh store (a temp folder, or a fresh MinIO prefix),
// syncs v1 untimed, flushes the disks, then times the sync of v2 under
// the same --name. The floor is the gunzip of v2's layer; peak RSS and
// peak anon are the highest of both syncs of every iteration.
func BenchmarkSyncIncremental(b *testing.B) {
	for _, name := range incrementalCatalogs {
		for _, backend := range []string{"fs", "s3"} {
			b.Run(name+"/"+backend, func(b *testing.B) { benchIncremental(b, name, backend) })
		}
	}
}

func benchIncremental(b *testing.B, name, backend string) {
	f := setup(b)
	v1 := f.image(b, name)
	v2 := f.changedImage(b, name)
	floor := gunzipFloor(b, v2.layerFile)
	b.SetBytes(v2.fbcBytes)
	var rss, anon int64
	var inProcess time.Duration
	var files, reused int
	phases := map[string]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		to := f.freshStore(b, backend, fmt.Sprintf("incr-%s-%s-%d-%d", name, backend, b.N, i))
		first := f.sync(b, v1.ref, to)
		rss = max(rss, peakRSS(b, first.stderr))
		anon = max(anon, peakAnon(b, first.stderr))
		flushDisks() // v1's writes are not left for the timed sync to wait on
		cmd := f.syncCmd(v2.ref, to)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		b.StartTimer()
		err := cmd.Run()
		b.StopTimer()
		if err != nil {
			b.Fatalf("sync of v2: %v\n%s", err, tail(stderr.String()))
		}
		rss = max(rss, peakRSS(b, stderr.String()))
		anon = max(anon, peakAnon(b, stderr.String()))
		n, m := syncFiles(stdout.String())
		if n > 0 && m != n-1 {
			b.Logf("iteration %d reused %d of %d files; all but the changed one could be", i, m, n)
		}
		files, reused = files+n, reused+m
		for ph, d := range syncPhases(stdout.String()) {
			phases[ph] += d
		}
		inProcess += syncDuration(b, stdout.String())
		f.drop(b, to)
		b.StartTimer()
	}
	b.StopTimer()
	reportSync(b, v2.fbcBytes, rss, anon, floor, inProcess)
	b.ReportMetric(float64(files)/float64(b.N), "files")
	b.ReportMetric(float64(reused)/float64(b.N), "reused-files")
	for ph, d := range phases {
		b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), ph+"-ms")
	}
}

// store is where one sync writes: a local folder, or a MinIO prefix.
type store struct {
	dir    string // fs
	prefix string // s3
}

// drop deletes what a sync wrote to s. A benchmark drops each
// iteration's output once measured: on a virtual machine whose host backs
// its memory lazily, gigabytes of page cache kept from earlier iterations
// made each new page of file cost the host's reclaim (a full sync's
// system time went from 0.3 to 2 s from the fifth iteration on, the store
// floor's barely).
func (f *fixture) drop(tb testing.TB, s store) {
	if s.dir != "" {
		os.RemoveAll(s.dir)
		return
	}
	ctx := context.Background()
	st := f.s3Store(tb, s.prefix)
	infos, err := st.List(ctx, "")
	if err != nil {
		tb.Fatalf("drop %s: %v", s.prefix, err)
	}
	for _, in := range infos {
		if err := st.Delete(ctx, in.Key); err != nil {
			tb.Fatalf("drop %s: %v", s.prefix, err)
		}
	}
}

// s3Store is the project's S3 store on prefix of the run's bucket, with
// the defaults a sync uses.
func (f *fixture) s3Store(tb testing.TB, prefix string) *s3.Store {
	m := f.minio
	st, err := s3.New(context.Background(), s3.Config{Bucket: f.bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey, Prefix: prefix, TempDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// freshStore returns an empty store of backend; prefix names the MinIO
// prefix, unique within the run's bucket.
func (f *fixture) freshStore(tb testing.TB, backend, prefix string) store {
	if backend == "s3" {
		return store{prefix: prefix}
	}
	d, err := os.MkdirTemp(f.work, "store-*")
	if err != nil {
		tb.Fatal(err)
	}
	return store{dir: d}
}

// syncCmd is `catalogsync sync` of image into to, always under the name
// "bench", printing its peak RSS; env is added to the environment, which
// loses any verifyEnv of the caller's.
func (f *fixture) syncCmd(image string, to store, env ...string) *exec.Cmd {
	args := []string{"sync", "--name", "bench", "--image", image,
		"--plain-http", f.registry.Host, "--no-docker-config", "--log-level", "warn"}
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, verifyEnv+"=") })
	base = append(base, "CATALOGSYNC_PRINT_PEAK_RSS=1")
	if to.dir != "" {
		args = append(args, "--store", to.dir)
	} else {
		base = append(base, s3Env(f, to.prefix)...)
	}
	cmd := exec.Command(f.bin, args...)
	cmd.Env = append(base, env...)
	return cmd
}

// syncOut is what one untimed sync printed.
type syncOut struct {
	stdout, stderr string
	files, reused  int
}

// sync runs syncCmd to its end and fails tb when it fails.
func (f *fixture) sync(tb testing.TB, image string, to store, env ...string) syncOut {
	tb.Helper()
	out, err := f.trySync(image, to, env...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// trySync runs syncCmd to its end; its error holds the end of stderr.
func (f *fixture) trySync(image string, to store, env ...string) (syncOut, error) {
	cmd := f.syncCmd(image, to, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return syncOut{}, fmt.Errorf("sync %s: %w\n%s", image, err, tail(stderr.String()))
	}
	out := syncOut{stdout: stdout.String(), stderr: stderr.String()}
	out.files, out.reused = syncFiles(out.stdout)
	return out, nil
}

// filesLine is the summary's count of FBC files, and of those an
// incremental sync took from the previous content unparsed:
// "  files       33 (32 reused)".
var filesLine = regexp.MustCompile(`(?m)^\s*files\s+(\d+)(?:\s+\((\d+) reused\))?\s*$`)

// syncFiles reads the files line; 0, 0 when the summary has none (a
// catalogsync without incremental sync).
func syncFiles(stdout string) (files, reused int) {
	m := filesLine.FindStringSubmatch(stdout)
	if m == nil {
		return 0, 0
	}
	files, _ = strconv.Atoi(m[1])
	reused, _ = strconv.Atoi(m[2])
	return files, reused
}

var (
	rssLine  = regexp.MustCompile(`(?m)^peak-rss-kib (\d+)\s*$`)
	anonLine = regexp.MustCompile(`(?m)^peak-anon-kib (\d+)\s*$`)
)

// peakRSSOf is peakRSS without a test to fail: 0 when it is missing.
func peakRSSOf(stderr string) int64 {
	v, _ := kibOf(rssLine, stderr)
	return v
}

// kibOf is the KiB figure of the line re matches, in bytes; false when
// stderr has no such line.
func kibOf(re *regexp.Regexp, stderr string) (int64, bool) {
	m := re.FindStringSubmatch(stderr)
	if m == nil {
		return 0, false
	}
	kib, _ := strconv.ParseInt(m[1], 10, 64)
	return kib << 10, true
}

// changedImage pushes the catalog's v2 (once per test binary): v1's files
// with its package file changed by imagebuild.AddBundle, as one layer.
func (f *fixture) changedImage(tb testing.TB, name string) image {
	tb.Helper()
	f.image(tb, name) // skips without the shared data; generates v1's folder
	spec := specOf(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.images[name+":v2"]; ok {
		return img
	}
	src, err := f.sourceDir(spec)
	if err != nil {
		tb.Fatal(err)
	}
	// The changed file is written apart: in the tree it would overwrite
	// the hard-linked original.
	changed := filepath.Join(f.work, name+"-v2-"+filepath.Base(spec.pkgFile))
	if _, err := imagebuild.ChangePackage(filepath.Join(src, filepath.FromSlash(spec.pkgFile)), changed, imagebuild.AddBundle, 1); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(f.work, name+"-v2")
	if err := linkTree(src, dir, map[string]string{spec.pkgFile: changed}); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	r := f.registry.Host + "/bench/" + name + ":v2"
	if _, err := imagebuild.Push(ctx, f.rc, r, imagebuild.FromDir(dir, "/configs")); err != nil {
		tb.Fatal(err)
	}
	layer, err := fetchLayer(ctx, f.rc, r, filepath.Join(f.work, name+"-v2.tar.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	img := image{ref: r, fbcBytes: dirSize(dir), layerFile: layer}
	f.images[name+":v2"] = img
	return img
}

// linkTree makes dst a copy of src with the files of over (relative path
// to the file to take instead) in place of src's. The other files are hard
// links where the file system allows, so a copy of a 220 MB catalog costs
// the changed files.
func linkTree(src, dst string, over map[string]string) error {
	os.RemoveAll(dst)
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, r)
		switch {
		case de.IsDir():
			return os.MkdirAll(to, 0o755)
		case over[filepath.ToSlash(r)] != "":
			return copyFile(over[filepath.ToSlash(r)], to)
		case os.Link(p, to) == nil:
			return nil
		}
		return copyFile(p, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
