// Package catalogspec is the one description of a catalog to keep synced:
// its name, its image reference (parsed once, when the catalog is
// configured) and its poll interval. The config file and the cluster's
// ClusterCatalogs build it; the engine, the pipeline, webhook and event
// matching, status and the API read it. It sits below all of them and
// imports nothing of theirs.
package catalogspec

import (
	"time"

	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/sync/source"
)

// Catalog is a catalog to keep synced.
type Catalog struct {
	// Name is a DNS-1123 subdomain, the catalog's key everywhere.
	Name string
	// Image is the reference the catalog syncs from.
	Image Image
	// PollInterval is how often a tag is re-resolved (0: never polled).
	PollInterval time.Duration
}

// Image is an image reference as configured, parsed once. A reference
// that does not parse is kept, so a sync of it fails saying why (a
// ClusterCatalog's spec is not checked before it is read); the config
// file refuses it at load. Images compare with ==.
type Image struct {
	s   string
	ref ref.Ref
	ok  bool
}

// ParseImage parses s: "host/repo:tag", "host/repo@sha256:…" or
// "ocidir://path:tag". Err reports a reference that does not parse.
func ParseImage(s string) Image {
	r, err := source.ParseRef(s)
	return Image{s: s, ref: r, ok: err == nil}
}

// String is the reference as configured.
func (i Image) String() string { return i.s }

// MarshalText writes the reference as configured.
func (i Image) MarshalText() ([]byte, error) { return []byte(i.s), nil }

// Err says why the reference does not parse; nil when it does. Only a
// reference that does not parse is parsed again, to say why.
func (i Image) Err() error {
	if i.ok {
		return nil
	}
	_, err := source.ParseRef(i.s)
	return err
}

// Ref is the parsed reference; ok is false when it does not parse.
func (i Image) Ref() (r ref.Ref, ok bool) { return i.ref, i.ok }

// Registry is the registry host of a registry image, "" for an OCI
// layout or a reference that does not parse.
func (i Image) Registry() string { return i.ref.Registry }

// Pinned reports whether the reference names a digest: it cannot move, so
// it is never polled once published.
func (i Image) Pinned() bool { return i.ref.Digest != "" }
