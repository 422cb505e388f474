package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// OpenReadOnly opens the store the settings name without checking that
// it may be written (read-only bucket keys suffice), and says where it is,
// for messages. A bucket setting that cannot work is a UsageError.
func (f Storage) OpenReadOnly(ctx context.Context, from Origins) (storage.Store, string, error) {
	dir, err := f.LocalDir(from)
	if err != nil {
		return nil, "", err
	}
	if dir != "" {
		s, err := fs.New(dir)
		if err != nil {
			return nil, dir, fmt.Errorf("open store %s: %w", dir, err)
		}
		return s, dir, nil
	}
	cfg := f.S3.Config()
	s, err := s3.NewReadOnly(ctx, cfg)
	if err != nil {
		if errors.Is(err, s3.ErrConfig) {
			return nil, "", UsageError{Msg: err.Error()}
		}
		return nil, "", fmt.Errorf("open store %s: %w", cfg.Location(), err)
	}
	return s, cfg.Location(), nil
}
