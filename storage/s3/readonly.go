package s3

import "context"

// NewReadOnly connects to the bucket for reading only, with credentials
// that may not write (a fleet member's): it checks nothing, since New's
// checks write a probe object. Writes through it fail as the bucket's
// policy says.
func NewReadOnly(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg)
}
