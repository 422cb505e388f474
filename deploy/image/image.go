package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// imageConfig is the runtime configuration, the same the Dockerfile's
// USER, ENV, EXPOSE, ENTRYPOINT and CMD give.
func imageConfig(labels map[string]string) v1.ImageConfig {
	return v1.ImageConfig{
		User:         fmt.Sprintf("%d:%d", userID, userID),
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Env: []string{
			"PATH=/usr/local/bin",
			"CATALOGSYNC_STORE=" + storeDir,
			"CATALOGSYNC_TMP_DIR=/tmp",
			"HOME=/tmp",
		},
		Entrypoint: []string{binPath},
		Cmd:        []string{"serve"},
		Labels:     labels,
	}
}

func run(ctx context.Context, o options) error {
	s, err := readSource(ctx, o.version)
	if err != nil {
		return err
	}
	base, err := baseEntries(o.caBundle)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.oci, 0o750); err != nil {
		return err
	}
	layout, err := ref.New("ocidir://" + filepath.ToSlash(o.oci) + ":" + o.tag)
	if err != nil {
		return err
	}
	rc := newClient(o)
	work, err := os.MkdirTemp("", "catalogsync-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b := builder{rc: rc, layout: layout, src: s, base: base, work: work, child: len(o.platforms) > 1}
	var children []descriptor.Descriptor
	for _, ps := range o.platforms {
		d, err := b.platform(ctx, ps)
		if err != nil {
			return err
		}
		children = append(children, d)
	}
	top := children[0]
	if len(children) > 1 {
		idx := v1.Index{Versioned: v1.IndexSchemaVersion, MediaType: mediatype.OCI1ManifestList, Manifests: children}
		if top, err = putManifest(ctx, rc, layout, idx, false); err != nil {
			return err
		}
	}
	fmt.Printf("%s@%s\n", layout.CommonName(), top.Digest)
	if o.push == "" {
		return nil
	}
	target, err := ref.New(o.push)
	if err != nil {
		return fmt.Errorf("--push: %w", err)
	}
	if err := rc.ImageCopy(ctx, layout, target); err != nil {
		return fmt.Errorf("push to %s: %w", target.CommonName(), err)
	}
	fmt.Printf("%s@%s\n", target.CommonName(), top.Digest)
	return nil
}

// newClient reads docker login's credentials; --plain-http turns TLS off
// for the --push registry only.
func newClient(o options) *regclient.RegClient {
	opts := []regclient.Opt{regclient.WithDockerCreds(), regclient.WithDockerCerts(), regclient.WithUserAgent("catalogsync-image")}
	if r, err := ref.New(o.push); err == nil && o.plainHTTP {
		h := config.HostNewName(r.Registry)
		h.TLS = config.TLSDisabled
		opts = append(opts, regclient.WithConfigHost(*h))
	}
	return regclient.New(opts...)
}

// builder writes the images of one run into the layout.
type builder struct {
	rc     *regclient.RegClient
	layout ref.Ref
	src    source
	base   []entry
	work   string // temp folder for binaries and layers
	child  bool   // manifests go into an index
}

// platform builds the binary for one platform, writes its two layers
// (base, binary), config and manifest to the layout, and returns the
// manifest's descriptor with its platform.
func (b builder) platform(ctx context.Context, ps string) (descriptor.Descriptor, error) {
	rc, layout, s, work := b.rc, b.layout, b.src, b.work
	p, err := platform.Parse(ps)
	if err != nil {
		return descriptor.Descriptor{}, fmt.Errorf("platform %q: %w", ps, err)
	}
	bin := filepath.Join(work, "bin-"+p.OS+"-"+p.Architecture+p.Variant)
	if err := goBuild(ctx, s, p, bin); err != nil {
		return descriptor.Descriptor{}, err
	}
	var layers []descriptor.Descriptor
	var diffIDs []digest.Digest
	for _, entries := range [][]entry{b.base, appEntries(bin)} {
		d, diffID, err := putLayer(ctx, rc, layout, entries, s, work)
		if err != nil {
			return descriptor.Descriptor{}, err
		}
		layers, diffIDs = append(layers, d), append(diffIDs, diffID)
	}
	cfg := v1.Image{
		Created:  &s.created,
		Platform: p,
		Config:   imageConfig(s.labels()),
		RootFS:   v1.RootFS{Type: "layers", DiffIDs: diffIDs},
	}
	cfgDesc, err := putBlob(ctx, rc, layout, mediatype.OCI1ImageConfig, cfg)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	m := v1.Manifest{Versioned: v1.ManifestSchemaVersion, MediaType: mediatype.OCI1Manifest, Config: cfgDesc, Layers: layers, Annotations: s.labels()}
	d, err := putManifest(ctx, rc, layout, m, b.child)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	d.Platform = &p
	return d, nil
}

// putLayer writes the layer to a temp file while hashing it (a blob's
// digest is needed before its upload), then stores the file.
func putLayer(ctx context.Context, rc *regclient.RegClient, r ref.Ref, entries []entry, s source, work string) (descriptor.Descriptor, digest.Digest, error) {
	f, err := os.CreateTemp(work, "layer-*")
	if err != nil {
		return descriptor.Descriptor{}, "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	d, diffID, err := writeLayer(f, entries, s.created)
	if err != nil {
		return descriptor.Descriptor{}, "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return descriptor.Descriptor{}, "", err
	}
	if _, err := rc.BlobPut(ctx, r, d, f); err != nil {
		return descriptor.Descriptor{}, "", fmt.Errorf("layer %s: %w", d.Digest, err)
	}
	return d, diffID, nil
}

func putBlob(ctx context.Context, rc *regclient.RegClient, r ref.Ref, mt string, v any) (descriptor.Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	d := descriptor.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if _, err := rc.BlobPut(ctx, r, d, bytes.NewReader(b)); err != nil {
		return descriptor.Descriptor{}, fmt.Errorf("config: %w", err)
	}
	return d, nil
}

// putManifest stores m (a manifest or an index); a child of an index goes
// by digest, the top level to the layout's tag.
func putManifest(ctx context.Context, rc *regclient.RegClient, r ref.Ref, m any, child bool) (descriptor.Descriptor, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	mm, err := manifest.New(manifest.WithRaw(raw))
	if err != nil {
		return descriptor.Descriptor{}, err
	}
	d := mm.GetDescriptor()
	target, opts := r, []regclient.ManifestOpts(nil)
	if child {
		target = r.SetDigest(d.Digest.String())
		opts = append(opts, regclient.WithManifestChild())
	}
	if err := rc.ManifestPut(ctx, target, mm, opts...); err != nil {
		return descriptor.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	return descriptor.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}, nil
}
