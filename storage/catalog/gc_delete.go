package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/catalogsync/catalogsync/storage"
)

// planDelete deletes one digest's content: meta.json first, then, unless
// the pointer came back to the digest meanwhile, everything else.
func (r *gcRun) planDelete(name string, d *gcDir, it GCItem, reason GCReason) {
	it.Reason = reason
	r.deletes = append(r.deletes, func(ctx context.Context) error {
		if r.protected[name][d.digest] || r.static[name] == d.digest {
			if d.metaKey != "" {
				r.rep.InactiveBytes += it.Bytes
			}
			it.Reason = GCReferenced
			if r.static[name] == d.digest {
				it.Reason = GCStatic
			}
			r.keep(it)
			return nil
		}
		if r.o.DryRun {
			r.deleted(it)
			return nil
		}
		if d.metaKey != "" {
			back, err := r.unmeta(ctx, name, d)
			if err != nil {
				return err
			}
			if back {
				it.Reason = GCRepublished
				r.keep(it)
				return nil
			}
		}
		for _, in := range d.objs {
			if in.Key == d.metaKey {
				continue
			}
			if err := r.s.Delete(ctx, in.Key); err != nil {
				return fmt.Errorf("catalog: gc: %w", err)
			}
		}
		r.deleted(it)
		if p, _, err := Current(ctx, r.s, name); err == nil && p.Digest == d.digest {
			r.problem("%s: published %s while gc deleted it; its next sync writes it again", name, d.digest)
		}
		return nil
	})
}

// unmeta deletes a digest's meta.json and reports whether the pointer
// names the digest right after, in which case meta.json is put back.
func (r *gcRun) unmeta(ctx context.Context, name string, d *gcDir) (back bool, err error) {
	saved, err := readSmall(ctx, r.s, d.metaKey)
	if errors.Is(err, storage.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("catalog: gc: %w", err)
	}
	if err := r.s.Delete(ctx, d.metaKey); err != nil {
		return false, fmt.Errorf("catalog: gc: %w", err)
	}
	p, _, err := Current(ctx, r.s, name)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return false, nil
	case err == nil && p.Digest != d.digest:
		return false, nil
	}
	// Current again, or the pointer cannot be read: the content is whole
	// but for meta.json, so put it back.
	if _, perr := r.s.Put(ctx, d.metaKey, bytes.NewReader(saved)); perr != nil {
		return true, fmt.Errorf("catalog: gc: restoring %s: %w", d.metaKey, perr)
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return true, fmt.Errorf("catalog: gc: %w", err)
	}
	return true, nil
}

// leftovers removes (or, dry, lists) interrupted writes of stores that
// keep them.
func (r *gcRun) leftovers(ctx context.Context, hints []string) error {
	lc, ok := r.s.(LeftoverCleaner)
	if !ok {
		return nil
	}
	age := r.o.LeftoverAge
	switch {
	case age == 0:
		age = DefaultLeftoverAge
	case age < 0:
		age = 0
	}
	var infos []storage.Info
	var err error
	if r.o.DryRun {
		infos, err = lc.Leftovers(ctx, keyRoot, age, hints)
	} else {
		infos, err = lc.RemoveLeftovers(ctx, keyRoot, age, hints)
	}
	for _, in := range infos {
		it := GCItem{Reason: GCLeftover, Keys: []string{in.Key}, Bytes: in.Size, InactiveSince: in.ModTime}
		if name, _, ok := strings.Cut(strings.TrimPrefix(in.Key, keyRoot), "/"); ok && strings.HasPrefix(in.Key, keyRoot) {
			it.Catalog = name
		}
		r.deleted(it)
	}
	if err != nil {
		return fmt.Errorf("catalog: gc: %w", err)
	}
	return nil
}
