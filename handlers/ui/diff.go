package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
)

// What changed between two digests of a catalog. Names come from the two
// indexes; whether an object changed needs its bytes, so both catalogs
// are streamed once (never held) and each line hashed. The result is a
// few names, cached: content under a digest never changes.

type objKey struct{ schema, pkg, name string }

// item is one package, channel or bundle in a change list.
type item struct{ Package, Name string }

type changeSet struct{ Added, Removed, Changed []item }

func (s changeSet) Empty() bool { return len(s.Added)+len(s.Removed)+len(s.Changed) == 0 }

type changes struct {
	None               bool
	Catalog, From, To  string
	FromTime, ToTime   time.Time
	Packages, Channels changeSet
	Bundles            changeSet
}

var hashSeed = maphash.MakeSeed()

// hashes streams c's catalog.jsonl and hashes every package, channel,
// bundle and deprecation line by its key.
func hashes(ctx context.Context, c *catalog.Catalog) (map[objKey]uint64, error) {
	rc, err := c.All(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<20)
	out := map[objKey]uint64{}
	var buf []byte
	var readErr error
	c.Objects(catalog.Query{}, func(o catalog.Object) bool {
		if o.Size > maxRead {
			readErr = fmt.Errorf("%w: one object of %d bytes", errTooLarge, o.Size)
			return false
		}
		if int64(cap(buf)) < o.Size {
			buf = make([]byte, o.Size)
		}
		b := buf[:o.Size]
		if _, readErr = io.ReadFull(br, b); readErr != nil {
			return false
		}
		k := objKey{o.Schema, o.Package, o.Name}
		switch o.Schema {
		case "olm.package":
			k.pkg = o.Name
		case "olm.deprecations":
			// The package's deprecations change the package.
			k = objKey{"olm.package", o.Package, o.Package}
		case "olm.channel", "olm.bundle":
		default:
			return true
		}
		out[k] ^= maphash.Bytes(hashSeed, b) // ^: a package and its deprecations combine
		return true
	})
	if readErr != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.Name, readErr)
	}
	return out, nil
}

func diff(old, cur map[objKey]uint64) (pk, ch, bu changeSet) {
	sets := map[string]*changeSet{"olm.package": &pk, "olm.channel": &ch, "olm.bundle": &bu}
	touched := map[string]bool{}
	for k, h := range cur {
		s := sets[k.schema]
		if oh, ok := old[k]; !ok {
			s.Added = append(s.Added, item{k.pkg, k.name})
		} else if oh != h {
			s.Changed = append(s.Changed, item{k.pkg, k.name})
		} else {
			continue
		}
		touched[k.pkg] = true
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			sets[k.schema].Removed = append(sets[k.schema].Removed, item{k.pkg, k.name})
			touched[k.pkg] = true
		}
	}
	// A package whose channels or bundles changed changed too.
	in := map[string]bool{}
	for _, l := range [][]item{pk.Added, pk.Removed, pk.Changed} {
		for _, it := range l {
			in[it.Package] = true
		}
	}
	for p := range touched {
		if !in[p] {
			if _, ok := cur[objKey{"olm.package", p, p}]; ok {
				pk.Changed = append(pk.Changed, item{p, p})
			}
		}
	}
	for _, s := range []*changeSet{&pk, &ch, &bu} {
		for _, l := range []*[]item{&s.Added, &s.Removed, &s.Changed} {
			slices.SortFunc(*l, func(a, b item) int {
				return strings.Compare(a.Package+"\x00"+a.Name, b.Package+"\x00"+b.Name)
			})
		}
	}
	return pk, ch, bu
}

// previous finds the complete content of c's catalog written last before
// c's own: the digest published before it, unless GC removed it.
func (h *Handler) previous(ctx context.Context, c *catalog.Catalog) (string, error) {
	infos, err := h.store.List(ctx, "catalogs/"+c.Name+"/")
	if err != nil {
		return "", err
	}
	var best string
	var bestTime time.Time
	for _, in := range infos {
		rest, ok := strings.CutSuffix(strings.TrimPrefix(in.Key, "catalogs/"+c.Name+"/"), "/meta.json")
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		d := strings.Replace(rest, "-", ":", 1)
		if d == c.Meta.Digest || !catalog.ValidDigest(d) {
			continue
		}
		m, ok, err := catalog.HasContent(ctx, h.store, c.Name, d)
		if err != nil {
			return "", err
		}
		if ok && m.Created.Before(c.Meta.Created) && m.Created.After(bestTime) {
			best, bestTime = d, m.Created
		}
	}
	return best, nil
}

func (h *Handler) serveChanges(w http.ResponseWriter, r *http.Request) {
	c := h.catalogFor(w, r)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*storeTimeout)
	defer cancel()
	from := r.URL.Query().Get("from")
	var err error
	if from == "" {
		if from, err = h.previous(ctx, c); err != nil {
			h.storeError(w, r, err)
			return
		}
	}
	if from == "" {
		h.render(w, "changes.html", map[string]any{"Catalog": c.Name, "To": c.Meta.Digest, "None": true})
		return
	}
	ch, err := h.changes(ctx, c, from)
	if err != nil {
		if errors.Is(err, catalog.ErrInvalidDigest) || errors.Is(err, catalog.ErrIncomplete) {
			err = fmt.Errorf("from: %w", storage.ErrNotExist)
		}
		h.storeError(w, r, err)
		return
	}
	h.render(w, "changes.html", ch)
}

// warmChanges computes, in the background, what c's last publish changed,
// so the link from the catalogs page answers from the cache: the first
// computation streams two catalogs (about half a second for 220 MB).
func (h *Handler) warmChanges(c *catalog.Catalog) {
	key := c.Name + "\x00" + c.Meta.Digest
	if _, busy := h.warming.LoadOrStore(key, true); busy {
		return
	}
	go func() {
		defer h.warming.Delete(key)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		from, err := h.previous(ctx, c)
		if err == nil && from != "" {
			_, err = h.changes(ctx, c, from)
		}
		if err != nil {
			h.log.Debug("ui: changes not precomputed", "catalog", c.Name, "err", err)
		}
	}()
}

func (h *Handler) changes(ctx context.Context, c *catalog.Catalog, from string) (*changes, error) {
	key := c.Name + "\x00" + from + "\x00" + c.Meta.Digest
	if ch, ok := h.diffs.Get(key); ok {
		return ch, nil
	}
	old, err := catalog.OpenDigest(ctx, h.store, c.Name, from)
	if err != nil {
		return nil, err
	}
	h.diffMu.Lock()
	defer h.diffMu.Unlock()
	if ch, ok := h.diffs.Get(key); ok {
		return ch, nil
	}
	oh, err := hashes(ctx, old)
	if err != nil {
		return nil, err
	}
	ch, err := hashes(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &changes{Catalog: c.Name, From: from, To: c.Meta.Digest, FromTime: old.Meta.Created, ToTime: c.Meta.Created}
	res.Packages, res.Channels, res.Bundles = diff(oh, ch)
	h.diffs.Add(key, res)
	return res, nil
}
