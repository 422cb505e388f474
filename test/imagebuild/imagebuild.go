// Package imagebuild builds OCI images for tests, examples and benchmarks:
// catalog images from a directory of File-Based Catalog files, images with
// hand-crafted (also hostile) tar entries, multi-platform indexes. It pushes
// them with regclient to a registry or an OCI layout.
//
// Output is deterministic: entries are sorted and carry fixed times, owners
// and modes, and nothing in the config records when it was built, so the
// same input always gives the same digests. Layers are streamed through a
// temp file while being hashed, so large catalogs never sit in memory.
package imagebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/mediatype"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/platform"
	"github.com/regclient/regclient/types/ref"
)

// ConfigsLabel is the image label naming the folder that holds the catalog.
const ConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// Compression values for Layer.Compression.
const (
	Gzip = "gzip"
	Zstd = "zstd"
	None = "none"
)

// Entry is one raw tar entry, written exactly as given: names are not
// cleaned, so entries can be hostile ("../x", "/etc/x", symlinks out of the
// tree, devices, whiteouts ".wh.foo" and ".wh..wh..opq").
type Entry struct {
	Name     string
	Typeflag byte   // tar.TypeReg when 0
	Body     []byte // only for regular files
	Linkname string // for symlinks and hard links
	Mode     int64  // 0644 for files, 0755 for directories, 0777 for symlinks when 0
}

// Layer is one image layer: the files of FromDir (when set) placed under
// DirPrefix, then Entries in their given order.
type Layer struct {
	Entries     []Entry
	FromDir     string
	DirPrefix   string // folder inside the layer for FromDir's files, e.g. "/configs"
	Compression string // Gzip (when empty), Zstd or None
	// Pushed, when set, is a layer already in the target repository (see
	// PushedLayers): Push refers to it and builds nothing, so an image can
	// be a big pushed layer plus a small new one on top.
	Pushed *PushedLayer
}

// PushedLayer is a layer blob already in a repository and the digest of
// its uncompressed tar (the image config's diff ID).
type PushedLayer struct {
	Descriptor descriptor.Descriptor
	DiffID     digest.Digest
}

// Image is an image to push.
type Image struct {
	Layers []Layer
	Labels map[string]string
	// Platforms such as "linux/amd64" (the default when empty). With more
	// than one, Push writes one manifest each, sharing the layers, and an
	// OCI image index over them.
	Platforms []string
}

// FromDir returns a catalog image: one gzip layer holding dir's files under
// configsPath (e.g. "/configs"), and the label that points at it.
func FromDir(dir, configsPath string) Image {
	return Image{
		Layers: []Layer{{FromDir: dir, DirPrefix: configsPath, Compression: Gzip}},
		Labels: map[string]string{ConfigsLabel: configsPath},
	}
}

// NewRegClient returns a regclient that talks plain HTTP to the given
// registry hosts ("127.0.0.1:port") and uses no stored credentials.
func NewRegClient(hosts ...string) *regclient.RegClient {
	cfgs := make([]config.Host, 0, len(hosts))
	for _, h := range hosts {
		c := config.HostNewName(h)
		c.TLS = config.TLSDisabled
		cfgs = append(cfgs, *c)
	}
	return regclient.New(regclient.WithConfigHost(cfgs...), regclient.WithUserAgent("catalogsync-imagebuild"))
}

// epoch is the modification time of every entry Push writes itself.
var epoch = time.Unix(0, 0).UTC()

// Push builds img and writes its blobs, configs, manifests and (for several
// platforms) index to refStr, a registry reference ("127.0.0.1:port/repo:tag")
// or an OCI layout ("ocidir://path:tag"). It returns the digest of the
// top-level manifest or index.
func Push(ctx context.Context, rc *regclient.RegClient, refStr string, img Image) (string, error) {
	r, err := ref.New(refStr)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	if r.Digest != "" {
		return "", fmt.Errorf("imagebuild: push to a tag, not a digest: %s", refStr)
	}
	plats := img.Platforms
	if len(plats) == 0 {
		plats = []string{"linux/amd64"}
	}

	// Layers are the same for every platform: build and upload each once.
	layers := make([]descriptor.Descriptor, len(img.Layers))
	diffIDs := make([]digest.Digest, len(img.Layers))
	for i, l := range img.Layers {
		if l.Pushed != nil {
			layers[i], diffIDs[i] = l.Pushed.Descriptor, l.Pushed.DiffID
			continue
		}
		layers[i], diffIDs[i], err = pushLayer(ctx, rc, r, l)
		if err != nil {
			return "", fmt.Errorf("imagebuild: layer %d: %w", i, err)
		}
	}

	var children []descriptor.Descriptor
	for _, ps := range plats {
		p, err := platform.Parse(ps)
		if err != nil {
			return "", fmt.Errorf("imagebuild: platform %q: %w", ps, err)
		}
		cfg := v1.Image{
			Platform: p,
			Config:   v1.ImageConfig{Labels: img.Labels},
			RootFS:   v1.RootFS{Type: "layers", DiffIDs: diffIDs},
		}
		cfgDesc, err := pushJSON(ctx, rc, r, mediatype.OCI1ImageConfig, cfg)
		if err != nil {
			return "", fmt.Errorf("imagebuild: config: %w", err)
		}
		m := v1.Manifest{
			Versioned: v1.ManifestSchemaVersion,
			MediaType: mediatype.OCI1Manifest,
			Config:    cfgDesc,
			Layers:    layers,
		}
		if len(plats) == 1 {
			d, err := putManifest(ctx, rc, r, m, false)
			return d.Digest.String(), err
		}
		d, err := putManifest(ctx, rc, r, m, true)
		if err != nil {
			return "", err
		}
		d.Platform = &p
		children = append(children, d)
	}
	d, err := putManifest(ctx, rc, r, v1.Index{
		Versioned: v1.IndexSchemaVersion,
		MediaType: mediatype.OCI1ManifestList,
		Manifests: children,
	}, false)
	return d.Digest.String(), err
}

// PushedLayers returns the layers of a single-platform image with their
// diff IDs, to build another image of the same repository on them.
func PushedLayers(ctx context.Context, rc *regclient.RegClient, refStr string) ([]PushedLayer, error) {
	r, err := ref.New(refStr)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	m, err := rc.ManifestGet(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	im, ok := m.(manifest.Imager)
	if !ok || m.IsList() {
		return nil, fmt.Errorf("imagebuild: %s is not a single-platform image", refStr)
	}
	layers, err := im.GetLayers()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cd, err := im.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cfg, err := rc.BlobGetOCIConfig(ctx, r, cd)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: config: %w", err)
	}
	diffIDs := cfg.GetConfig().RootFS.DiffIDs
	if len(diffIDs) != len(layers) {
		return nil, fmt.Errorf("imagebuild: %s: %d layers, %d diff IDs", refStr, len(layers), len(diffIDs))
	}
	out := make([]PushedLayer, len(layers))
	for i, l := range layers {
		out[i] = PushedLayer{Descriptor: descriptor.Descriptor{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}, DiffID: diffIDs[i]}
	}
	return out, nil
}

// putManifest pushes m, a v1.Manifest or v1.Index, and returns its
// descriptor. A child of an index goes by digest (and stays out of an OCI
// layout's index.json); the top level goes to r's tag.
func putManifest(ctx context.Context, rc *regclient.RegClient, r ref.Ref, m any, child bool) (descriptor.Descriptor, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	mm, err := manifest.New(manifest.WithRaw(raw))
	if err != nil {
		return descriptor.Descriptor{}, fmt.Errorf("imagebuild: manifest: %w", err)
	}
	d := mm.GetDescriptor()
	target := r
	var opts []regclient.ManifestOpts
	if child {
		target = r.SetDigest(d.Digest.String())
		opts = append(opts, regclient.WithManifestChild())
	}
	if err := rc.ManifestPut(ctx, target, mm, opts...); err != nil {
		return descriptor.Descriptor{}, fmt.Errorf("imagebuild: put manifest %s: %w", target.CommonName(), err)
	}
	return descriptor.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}, nil
}

func pushJSON(ctx context.Context, rc *regclient.RegClient, r ref.Ref, mt string, v any) (descriptor.Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	d := descriptor.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if _, err := rc.BlobPut(ctx, r, d, bytes.NewReader(b)); err != nil {
		return descriptor.Descriptor{}, err
	}
	return d, nil
}

// pushLayer writes the layer to a temp file while hashing both the
// compressed blob and the uncompressed tar (the diff ID), then uploads the
// file. The upload needs the digest up front, hence the file.
func pushLayer(ctx context.Context, rc *regclient.RegClient, r ref.Ref, l Layer) (descriptor.Descriptor, digest.Digest, error) {
	f, err := os.CreateTemp("", "imagebuild-layer-*")
	if err != nil {
		return descriptor.Descriptor{}, "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()

	d, diffID, err := WriteLayer(f, l)
	if err != nil {
		return descriptor.Descriptor{}, "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return descriptor.Descriptor{}, "", err
	}
	// A seekable reader lets regclient fall back to a chunked upload.
	if _, err := rc.BlobPut(ctx, r, d, f); err != nil {
		return descriptor.Descriptor{}, "", fmt.Errorf("upload %s: %w", d.Digest, err)
	}
	return d, diffID, nil
}

// WriteLayer writes the layer's compressed tar to w and returns its
// descriptor and the digest of the uncompressed tar (its diff ID).
func WriteLayer(w io.Writer, l Layer) (descriptor.Descriptor, digest.Digest, error) {
	var mt string
	switch l.Compression {
	case Gzip, "":
		mt = mediatype.OCI1LayerGzip
	case Zstd:
		mt = mediatype.OCI1LayerZstd
	case None:
		mt = mediatype.OCI1Layer
	default:
		return descriptor.Descriptor{}, "", fmt.Errorf("unknown compression %q", l.Compression)
	}

	blobHash, diffHash := sha256.New(), sha256.New()
	out := &countWriter{w: io.MultiWriter(w, blobHash)}
	buf := bufio.NewWriterSize(out, 1<<20)
	var comp io.WriteCloser
	switch mt {
	case mediatype.OCI1LayerGzip:
		comp = gzip.NewWriter(buf) // no name and zero mtime in the header
	case mediatype.OCI1LayerZstd:
		zw, err := zstd.NewWriter(buf)
		if err != nil {
			return descriptor.Descriptor{}, "", err
		}
		comp = zw
	default:
		comp = nopCloser{buf}
	}
	tw := tar.NewWriter(io.MultiWriter(comp, diffHash))
	if err := writeEntries(tw, l); err != nil {
		return descriptor.Descriptor{}, "", err
	}
	for _, c := range []io.Closer{tw, comp} {
		if err := c.Close(); err != nil {
			return descriptor.Descriptor{}, "", err
		}
	}
	if err := buf.Flush(); err != nil {
		return descriptor.Descriptor{}, "", err
	}
	d := descriptor.Descriptor{MediaType: mt, Digest: sum(blobHash), Size: out.n}
	return d, sum(diffHash), nil
}

func writeEntries(tw *tar.Writer, l Layer) error {
	if l.FromDir != "" {
		if err := writeDir(tw, l.FromDir, l.DirPrefix); err != nil {
			return err
		}
	}
	for _, e := range l.Entries {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("entry %q: %w", e.Name, err)
		}
	}
	return nil
}

func writeEntry(tw *tar.Writer, e Entry) error {
	h := &tar.Header{
		Name:     e.Name,
		Typeflag: e.Typeflag,
		Linkname: e.Linkname,
		Mode:     e.Mode,
		ModTime:  epoch,
	}
	if h.Typeflag == 0 {
		h.Typeflag = tar.TypeReg
	}
	if h.Mode == 0 {
		switch h.Typeflag {
		case tar.TypeDir:
			h.Mode = 0o755
		case tar.TypeSymlink:
			h.Mode = 0o777
		default:
			h.Mode = 0o644
		}
	}
	switch {
	case h.Typeflag == tar.TypeReg:
		h.Size = int64(len(e.Body))
	case len(e.Body) > 0:
		return errors.New("only regular files have a body")
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(e.Body)
	return err
}

// writeDir adds dir's tree under prefix: the prefix's own folders first,
// then every entry in lexical walk order, with normalised modes.
func writeDir(tw *tar.Writer, dir, prefix string) error {
	prefix = strings.Trim(path.Clean("/"+filepath.ToSlash(prefix)), "/")
	if prefix != "" {
		parts := strings.Split(prefix, "/")
		for i := range parts[:len(parts)-1] {
			if err := writeEntry(tw, Entry{Name: strings.Join(parts[:i+1], "/") + "/", Typeflag: tar.TypeDir}); err != nil {
				return err
			}
		}
	}
	// WalkDir visits entries in lexical order, which makes the tar deterministic.
	return filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := path.Join(prefix, filepath.ToSlash(rel))
		if name == "." || name == "" {
			return nil // the root itself when there is no prefix
		}
		switch t := de.Type(); {
		case t.IsDir():
			return writeEntry(tw, Entry{Name: name + "/", Typeflag: tar.TypeDir})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return writeEntry(tw, Entry{Name: name, Typeflag: tar.TypeSymlink, Linkname: target})
		case t.IsRegular():
			return writeFile(tw, p, name)
		default:
			return fmt.Errorf("%s: unsupported file type %v", p, t)
		}
	})
}

// writeFile streams one file from disk into the tar.
func writeFile(tw *tar.Writer, p, name string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: fi.Size(), ModTime: epoch}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

func sum(h hash.Hash) digest.Digest {
	return digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
