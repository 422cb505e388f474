package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// configuredFile is written by every replica that configures a catalog,
// so that GC run by a replica with another catalog list (a rolling
// update, another deployment on a shared bucket) sees it is still wanted
// even when nothing publishes or polls it.
const configuredFile = "configured"

// MarkConfigured records that names are configured here: for each, it
// rewrites catalogs/<name>/configured when that is missing or older than
// fresh, so GC's unconfigured age never runs out on a catalog some
// replica still lists. It costs one Stat per name, and a small Put at most
// once per fresh. It stops at the first store failure.
func MarkConfigured(ctx context.Context, s storage.Store, names []string, fresh time.Duration) error {
	for _, name := range names {
		if err := checkName(name); err != nil {
			return err
		}
		key := catalogPrefix(name) + configuredFile
		in, err := s.Stat(ctx, key)
		switch {
		case err == nil && time.Since(in.ModTime) < fresh:
			continue
		case err != nil && !errors.Is(err, storage.ErrNotExist):
			return fmt.Errorf("catalog: %s: %w", name, err)
		}
		stamp := []byte(time.Now().UTC().Format(time.RFC3339) + "\n")
		if _, err := s.Put(ctx, key, bytes.NewReader(stamp)); err != nil {
			return fmt.Errorf("catalog: %s: %w", name, err)
		}
	}
	return nil
}
