package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/mediatype"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// testdata returns a folder of the shared test data (beside the repo, as
// ../shared/testdata from its root), skipping the test when it is absent.
func testdata(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "testdata", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data %s is absent (%v): it lives beside the repo, in ../shared/testdata", p, err)
	}
	return p
}

// pulled is an image read back through regclient.
type pulled struct {
	digest   string
	manifest v1.Manifest
	config   v1.Image
	layers   [][]tarEntry // per layer, in tar order
}

type tarEntry struct {
	Name     string
	Typeflag byte
	Linkname string
	Mode     int64
	ModTime  time.Time
	Body     []byte
}

func pull(t *testing.T, rc *regclient.RegClient, refStr string) pulled {
	t.Helper()
	ctx := context.Background()
	r, err := ref.New(refStr)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rc.ManifestGet(ctx, r)
	if err != nil {
		t.Fatalf("ManifestGet %s: %v", refStr, err)
	}
	raw, _ := m.RawBody()
	var p pulled
	p.digest = m.GetDescriptor().Digest.String()
	if err := json.Unmarshal(raw, &p.manifest); err != nil {
		t.Fatal(err)
	}
	if p.manifest.MediaType != mediatype.OCI1Manifest {
		t.Fatalf("%s is a %s, not an OCI manifest", refStr, p.manifest.MediaType)
	}
	cfg := readBlob(t, rc, r, p.manifest.Config.Digest.String())
	if err := json.Unmarshal(cfg, &p.config); err != nil {
		t.Fatal(err)
	}
	for i, l := range p.manifest.Layers {
		blob := readBlob(t, rc, r, l.Digest.String())
		if int64(len(blob)) != l.Size {
			t.Fatalf("layer %d: %d bytes, descriptor says %d", i, len(blob), l.Size)
		}
		tarBytes := decompress(t, l.MediaType, blob)
		diff := sha256.Sum256(tarBytes)
		if want := "sha256:" + hex.EncodeToString(diff[:]); p.config.RootFS.DiffIDs[i].String() != want {
			t.Fatalf("layer %d: diff ID %s, uncompressed tar is %s", i, p.config.RootFS.DiffIDs[i], want)
		}
		p.layers = append(p.layers, readTar(t, tarBytes))
	}
	return p
}

func readBlob(t *testing.T, rc *regclient.RegClient, r ref.Ref, dig string) []byte {
	t.Helper()
	br, err := rc.BlobGet(context.Background(), r, descriptor.Descriptor{Digest: digest.Digest(dig)})
	if err != nil {
		t.Fatalf("BlobGet %s: %v", dig, err)
	}
	defer br.Close()
	b, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading blob %s: %v", dig, err)
	}
	sum := sha256.Sum256(b)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != dig {
		t.Fatalf("blob %s has digest %s", dig, got)
	}
	return b
}

func decompress(t *testing.T, mt string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch mt {
	case mediatype.OCI1LayerGzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case mediatype.OCI1LayerZstd:
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	case mediatype.OCI1Layer:
		return b
	default:
		t.Fatalf("unexpected layer media type %s", mt)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decompressing %s: %v", mt, err)
	}
	return out
}

func readTar(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var es []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return es
		}
		// Hostile names are the point of some tests: keep them.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			t.Fatalf("tar: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, tarEntry{h.Name, h.Typeflag, h.Linkname, h.Mode, h.ModTime, body})
	}
}

func names(es []tarEntry) []string {
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name)
	}
	return ns
}

// wantCatalogTar lists the tar FromDir(dir, "/configs") must hold: the
// folders, then every file with its content, in lexical walk order.
func wantCatalogTar(t *testing.T, dir string) []tarEntry {
	t.Helper()
	want := []tarEntry{{Name: "configs/", Typeflag: tar.TypeDir, Mode: 0o755}}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := "configs/" + filepath.ToSlash(rel)
		if de.IsDir() {
			want = append(want, tarEntry{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755})
			return nil
		}
		b, err := os.ReadFile(p)
		want = append(want, tarEntry{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Body: b})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func checkEntries(t *testing.T, got, want []tarEntry) {
	t.Helper()
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("tar entries\n got %q\nwant %q", names(got), names(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Typeflag != w.Typeflag || g.Linkname != w.Linkname || g.Mode != w.Mode || !bytes.Equal(g.Body, w.Body) {
			t.Errorf("entry %q: got type %q link %q mode %o %d bytes; want type %q link %q mode %o %d bytes",
				w.Name, g.Typeflag, g.Linkname, g.Mode, len(g.Body), w.Typeflag, w.Linkname, w.Mode, len(w.Body))
		}
		if !g.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("entry %q: mtime %v, want the epoch", w.Name, g.ModTime)
		}
	}
}

func TestPushFromDirToRegistryAndOCIDir(t *testing.T) {
	src := testdata(t, "fbc/community-v4.21-3pkgs/configs")
	ctx := context.Background()
	reg := servers.StartRegistry(t)
	rc := imagebuild.NewRegClient(reg.Host)
	img := imagebuild.FromDir(src, "/configs")

	regRef := reg.Host + "/catalogs/community:v4.21"
	dig, err := imagebuild.Push(ctx, rc, regRef, img)
	if err != nil {
		t.Fatal(err)
	}
	p := pull(t, rc, regRef)
	if p.digest != dig {
		t.Fatalf("Push returned %s, the tag resolves to %s", dig, p.digest)
	}
	if got := p.config.Config.Labels[imagebuild.ConfigsLabel]; got != "/configs" {
		t.Fatalf("label %s = %q", imagebuild.ConfigsLabel, got)
	}
	if p.config.OS != "linux" || p.config.Architecture != "amd64" {
		t.Fatalf("platform %s/%s", p.config.OS, p.config.Architecture)
	}
	if len(p.layers) != 1 || p.manifest.Layers[0].MediaType != mediatype.OCI1LayerGzip {
		t.Fatalf("want one gzip layer, got %+v", p.manifest.Layers)
	}
	checkEntries(t, p.layers[0], wantCatalogTar(t, src))

	// The same input gives the same digest: again to the registry, and to
	// an OCI layout.
	again, err := imagebuild.Push(ctx, rc, reg.Host+"/other/repo:again", img)
	if err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(t.TempDir(), "layout")
	ociRef := "ocidir://" + layout + ":v4.21"
	inDir, err := imagebuild.Push(ctx, rc, ociRef, img)
	if err != nil {
		t.Fatal(err)
	}
	if again != dig || inDir != dig {
		t.Fatalf("digests differ for the same input: %s, %s, %s", dig, again, inDir)
	}
	for _, f := range []string{"oci-layout", "index.json"} {
		if _, err := os.Stat(filepath.Join(layout, f)); err != nil {
			t.Fatalf("OCI layout: %v", err)
		}
	}
	checkEntries(t, pull(t, rc, ociRef).layers[0], wantCatalogTar(t, src))
}

func TestPushDigestFollowsContent(t *testing.T) {
	ctx := context.Background()
	rc := imagebuild.NewRegClient()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pkg/catalog.yaml", "schema: olm.package\nname: pkg\n")
	write("b/catalog.json", `{"schema":"olm.package","name":"b"}`)
	push := func() string {
		t.Helper()
		d, err := imagebuild.Push(ctx, rc, "ocidir://"+filepath.Join(t.TempDir(), "l")+":x", imagebuild.FromDir(dir, "/configs"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := push()
	// File times, permissions and creation order do not matter...
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "pkg/catalog.yaml"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "b/catalog.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if second := push(); second != first {
		t.Fatalf("digest changed with only metadata changes: %s then %s", first, second)
	}
	// ...content does.
	write("pkg/catalog.yaml", "schema: olm.package\nname: pkg2\n")
	if third := push(); third == first {
		t.Fatal("digest did not change with the content")
	}
}

func TestPushMultiPlatformIndex(t *testing.T) {
	src := testdata(t, "fbc/tiny/configs")
	ctx := context.Background()
	reg := servers.StartRegistry(t)
	rc := imagebuild.NewRegClient(reg.Host)
	img := imagebuild.FromDir(src, "/configs")
	img.Platforms = []string{"linux/amd64", "linux/arm64", "linux/s390x"}
	refStr := reg.Host + "/multi:v1"
	dig, err := imagebuild.Push(ctx, rc, refStr, img)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ref.New(refStr)
	m, err := rc.ManifestGet(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := m.RawBody()
	var idx v1.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	if m.GetDescriptor().Digest.String() != dig || idx.MediaType != mediatype.OCI1ManifestList || len(idx.Manifests) != 3 {
		t.Fatalf("index %s (%s): %s", m.GetDescriptor().Digest, dig, raw)
	}
	var layer string
	for i, d := range idx.Manifests {
		want := strings.Split(img.Platforms[i], "/")
		if d.Platform == nil || d.Platform.OS != want[0] || d.Platform.Architecture != want[1] {
			t.Fatalf("index entry %d: platform %+v, want %s", i, d.Platform, img.Platforms[i])
		}
		p := pull(t, rc, reg.Host+"/multi@"+d.Digest.String())
		if p.config.OS != want[0] || p.config.Architecture != want[1] {
			t.Fatalf("config of %s says %s/%s", img.Platforms[i], p.config.OS, p.config.Architecture)
		}
		// The platforms share one layer.
		if l := p.manifest.Layers[0].Digest.String(); layer == "" {
			layer = l
		} else if l != layer {
			t.Fatalf("platform %s has layer %s, others %s", img.Platforms[i], l, layer)
		}
		checkEntries(t, p.layers[0], wantCatalogTar(t, src))
	}

	// In an OCI layout only the index is tagged.
	layout := filepath.Join(t.TempDir(), "layout")
	if d, err := imagebuild.Push(ctx, rc, "ocidir://"+layout+":v1", img); err != nil || d != dig {
		t.Fatalf("ocidir push: %s, %v (registry gave %s)", d, err, dig)
	}
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top v1.Index
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest.String() != dig {
		t.Fatalf("index.json: %s", b)
	}
}

func TestPushCompressions(t *testing.T) {
	ctx := context.Background()
	rc := imagebuild.NewRegClient()
	entries := []imagebuild.Entry{
		{Name: "configs/", Typeflag: tar.TypeDir},
		{Name: "configs/catalog.yaml", Body: bytes.Repeat([]byte("schema: olm.package\n"), 1000)},
	}
	want := []tarEntry{
		{Name: "configs/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "configs/catalog.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Body: entries[1].Body},
	}
	digests := map[string]bool{}
	for _, c := range []struct{ compression, mediaType string }{
		{"", mediatype.OCI1LayerGzip},
		{imagebuild.Gzip, mediatype.OCI1LayerGzip},
		{imagebuild.Zstd, mediatype.OCI1LayerZstd},
		{imagebuild.None, mediatype.OCI1Layer},
	} {
		refStr := "ocidir://" + filepath.Join(t.TempDir(), "l") + ":x"
		img := imagebuild.Image{Layers: []imagebuild.Layer{{Entries: entries, Compression: c.compression}}}
		if _, err := imagebuild.Push(ctx, rc, refStr, img); err != nil {
			t.Fatalf("%q: %v", c.compression, err)
		}
		p := pull(t, rc, refStr)
		if mt := p.manifest.Layers[0].MediaType; mt != c.mediaType {
			t.Fatalf("compression %q: media type %s, want %s", c.compression, mt, c.mediaType)
		}
		checkEntries(t, p.layers[0], want)
		digests[p.manifest.Layers[0].Digest.String()] = true
		// Deterministic for every compression, not just gzip.
		again, err := imagebuild.Push(ctx, rc, "ocidir://"+filepath.Join(t.TempDir(), "l")+":x", img)
		if err != nil || again != p.digest {
			t.Fatalf("compression %q: second push gave %s (%v), first %s", c.compression, again, err, p.digest)
		}
	}
	if len(digests) != 3 {
		t.Fatalf("want 3 distinct layer blobs (gzip, zstd, none), got %d", len(digests))
	}
	img := imagebuild.Image{Layers: []imagebuild.Layer{{Entries: entries, Compression: "brotli"}}}
	if _, err := imagebuild.Push(ctx, rc, "ocidir://"+t.TempDir()+":x", img); err == nil {
		t.Fatal("unknown compression accepted")
	}
}

func TestPushHostileEntriesVerbatim(t *testing.T) {
	ctx := context.Background()
	rc := imagebuild.NewRegClient()
	hostile := []imagebuild.Entry{
		{Name: "configs/", Typeflag: tar.TypeDir},
		{Name: "../escape.yaml", Body: []byte("schema: olm.package\nname: evil\n")},
		{Name: "/etc/absolute", Body: []byte("x")},
		{Name: "configs/link-out", Typeflag: tar.TypeSymlink, Linkname: "../../../etc/passwd"},
		{Name: "configs/hard", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"},
		{Name: "configs/dev-null", Typeflag: tar.TypeChar, Mode: 0o666},
		{Name: "configs/disk", Typeflag: tar.TypeBlock},
		{Name: "configs/fifo", Typeflag: tar.TypeFifo},
		{Name: "configs/.wh.gone.yaml"},
		{Name: "configs/sub/.wh..wh..opq"},
		{Name: "configs/setuid", Body: []byte("#!/bin/sh\n"), Mode: 0o4755},
		{Name: "configs/../../twisted", Body: []byte("y")},
	}
	refStr := "ocidir://" + filepath.Join(t.TempDir(), "l") + ":hostile"
	img := imagebuild.Image{Layers: []imagebuild.Layer{
		{Entries: hostile, Compression: imagebuild.None},
		{Entries: []imagebuild.Entry{{Name: "configs/second-layer.yaml", Body: []byte("z")}}},
	}}
	if _, err := imagebuild.Push(ctx, rc, refStr, img); err != nil {
		t.Fatal(err)
	}
	p := pull(t, rc, refStr)
	if len(p.layers) != 2 {
		t.Fatalf("want 2 layers, got %d", len(p.layers))
	}
	var want []tarEntry
	for _, e := range hostile {
		te := tarEntry{Name: e.Name, Typeflag: e.Typeflag, Linkname: e.Linkname, Mode: e.Mode, Body: e.Body}
		if te.Typeflag == 0 {
			te.Typeflag = tar.TypeReg
		}
		if te.Mode == 0 {
			te.Mode = map[byte]int64{tar.TypeDir: 0o755, tar.TypeSymlink: 0o777}[te.Typeflag]
			if te.Mode == 0 {
				te.Mode = 0o644
			}
		}
		want = append(want, te)
	}
	checkEntries(t, p.layers[0], want)

	// A body on anything but a regular file cannot be written as asked.
	bad := imagebuild.Image{Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{{Name: "l", Typeflag: tar.TypeSymlink, Body: []byte("x")}}}}}
	if _, err := imagebuild.Push(ctx, rc, "ocidir://"+t.TempDir()+":x", bad); err == nil {
		t.Fatal("a symlink with a body was accepted")
	}
}

// TestPushStreamsLargeLayers pushes a generated catalog of about 28 MB,
// uncompressed, and checks that the heap never grows by anything near the
// layer's size: the layer goes through a temp file, not memory.
func TestPushStreamsLargeLayers(t *testing.T) {
	src := testdata(t, "fbc/community-v4.21/configs")
	if testing.Short() {
		t.Skip("generates and pushes a 28 MB catalog")
	}
	dir := t.TempDir()
	if err := imagebuild.GenerateCopies(src, dir, 2); err != nil {
		t.Fatal(err)
	}
	img := imagebuild.FromDir(dir, "/configs")
	img.Layers[0].Compression = imagebuild.None

	// Collect garbage eagerly so the heap measures what is live.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	refStr := "ocidir://" + filepath.Join(t.TempDir(), "l") + ":big"
	_, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(), refStr, img)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ref.New(refStr)
	m, err := imagebuild.NewRegClient().ManifestGet(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := m.RawBody()
	var man v1.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	size := man.Layers[0].Size
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("layer %d bytes; heap grew by at most %d bytes", size, grew)
	if size < 25<<20 {
		t.Fatalf("layer is only %d bytes: the test needs a large one", size)
	}
	if grew > size/3 {
		t.Fatalf("heap grew by %d bytes while pushing a %d byte layer", grew, size)
	}
}

// An image can reuse a pushed layer and add a small one on top: the base
// layer is referred to as it is (same descriptor and diff ID), not built
// again.
func TestPushOnPushedLayers(t *testing.T) {
	ctx := context.Background()
	rc := imagebuild.NewRegClient()
	layout := "ocidir://" + filepath.Join(t.TempDir(), "l")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "catalog.yaml"), []byte("schema: olm.package\nname: pkg\n"), 0o644)
	if _, err := imagebuild.Push(ctx, rc, layout+":base", imagebuild.FromDir(dir, "/configs")); err != nil {
		t.Fatal(err)
	}
	base, err := imagebuild.PushedLayers(ctx, rc, layout+":base")
	if err != nil {
		t.Fatal(err)
	}
	basePulled := pull(t, rc, layout+":base")
	if len(base) != 1 || base[0].Descriptor.Digest != basePulled.manifest.Layers[0].Digest || base[0].DiffID != basePulled.config.RootFS.DiffIDs[0] {
		t.Fatalf("PushedLayers = %+v, the image has %+v / %v", base, basePulled.manifest.Layers, basePulled.config.RootFS.DiffIDs)
	}
	top := imagebuild.Layer{Entries: []imagebuild.Entry{{Name: "configs/pkg/catalog.yaml", Body: []byte("schema: olm.package\nname: pkg2\n")}}}
	img := imagebuild.Image{Layers: []imagebuild.Layer{{Pushed: &base[0]}, top}, Labels: map[string]string{imagebuild.ConfigsLabel: "/configs"}}
	if _, err := imagebuild.Push(ctx, rc, layout+":v2", img); err != nil {
		t.Fatal(err)
	}
	p := pull(t, rc, layout+":v2")
	if len(p.layers) != 2 || p.manifest.Layers[0].Digest != base[0].Descriptor.Digest || p.config.RootFS.DiffIDs[0] != base[0].DiffID {
		t.Fatalf("layers %+v, diff IDs %v", p.manifest.Layers, p.config.RootFS.DiffIDs)
	}
	if got := p.layers[1]; len(got) != 1 || string(got[0].Body) != "schema: olm.package\nname: pkg2\n" {
		t.Fatalf("top layer %+v", got)
	}
}
