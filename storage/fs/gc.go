package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// Leftovers lists the temp files under prefix of writers that last wrote
// more than olderThan ago (olderThan <= 0: every one), as catalog.GC wants
// them: Key is the temp file's path. keys is ignored: the walk finds all.
func (s *Store) Leftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	return s.staleTemp(ctx, prefix, olderThan, false)
}

// RemoveLeftovers removes what Leftovers lists (as CleanTemp does) and
// returns what it removed.
func (s *Store) RemoveLeftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	return s.staleTemp(ctx, prefix, olderThan, true)
}

func (s *Store) staleTemp(ctx context.Context, prefix string, olderThan time.Duration, remove bool) ([]storage.Info, error) {
	if !storage.ValidPrefix(prefix) {
		return nil, fmt.Errorf("fs: leftovers %q: %w", prefix, storage.ErrInvalidKey)
	}
	cutoff := time.Now().Add(-olderThan)
	var out []storage.Info
	err := iofs.WalkDir(s.root.FS(), ".", func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return iofs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(d.Name(), TempPrefix) || !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || olderThan > 0 && !fi.ModTime().Before(cutoff) {
			return nil
		}
		if remove {
			if err := s.root.Remove(p); err != nil {
				return nil
			}
		}
		out = append(out, storage.Info{Key: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("fs: leftovers: %w", err)
	}
	return out, nil
}
