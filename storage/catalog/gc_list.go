package catalog

import (
	"slices"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// gcDir is one digest's directory as listed.
type gcDir struct {
	digest string
	objs   []storage.Info
	// metaKey is meta.json's key, "" when there is none.
	metaKey string
	metaMod time.Time
	newest  time.Time
	bytes   int64
}

// gcCatalog is everything listed under one catalogs/<name>/.
type gcCatalog struct {
	name    string
	all     []storage.Info
	current *storage.Info // as listed; nil when there was none
	dirs    map[string]*gcDir
	newest  time.Time
	bytes   int64
}

func gcSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gcGroup sorts a listing of catalogs/ by catalog and digest directory.
// Objects directly under catalogs/ are no catalog's and are ignored.
func gcGroup(infos []storage.Info) map[string]*gcCatalog {
	cats := map[string]*gcCatalog{}
	for _, in := range infos {
		name, rest, ok := strings.Cut(strings.TrimPrefix(in.Key, keyRoot), "/")
		if !ok {
			continue
		}
		c := cats[name]
		if c == nil {
			c = &gcCatalog{name: name, dirs: map[string]*gcDir{}}
			cats[name] = c
		}
		c.all = append(c.all, in)
		c.bytes += in.Size
		c.newest = gcLater(c.newest, in.ModTime)
		if rest == currentFile {
			cur := in
			c.current = &cur
			continue
		}
		dir, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		digest := gcDirDigest(dir)
		if digest == "" {
			continue
		}
		d := c.dirs[dir]
		if d == nil {
			d = &gcDir{digest: digest}
			c.dirs[dir] = d
		}
		d.objs = append(d.objs, in)
		d.bytes += in.Size
		d.newest = gcLater(d.newest, in.ModTime)
		if file == metaFile {
			d.metaKey, d.metaMod = in.Key, in.ModTime
		}
	}
	return cats
}

// gcDirDigest is the digest a content directory name stands for, or "".
func gcDirDigest(dir string) string {
	alg, hex, ok := strings.Cut(dir, "-")
	if !ok || !ValidDigest(alg+":"+hex) {
		return ""
	}
	return alg + ":" + hex
}

func gcLater(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func gcKeys(infos []storage.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}
