package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/catalogsync/catalogsync/sync/buildindex"
)

// indexCmd validates an FBC directory and writes a pre-built index for a
// catalog image's build stage (see docs/build-time-index.md).
type indexCmd struct {
	Out string `name:"out" docdefault:"catalogsync-index beside DIR" help:"directory to write the index to"`
	Dir string `arg:"" name:"dir" help:"the FBC directory"`
}

func (c *indexCmd) run(ctx context.Context, stdout io.Writer) error {
	dir := filepath.Clean(c.Dir)
	out := c.Out
	if out == "" {
		// Beside, not inside: inside, the index would be part of the FBC
		// it describes.
		out = filepath.Join(filepath.Dir(dir), "catalogsync-index")
	}
	m, err := buildindex.Build(ctx, dir, out)
	if err != nil {
		return fmt.Errorf("index %s: %w", dir, err)
	}
	fmt.Fprintf(stdout, "indexed %s: %d objects, %d packages, %d bundles\nfbc digest %s\nwritten to %s\n",
		dir, m.Objects, m.Packages, m.Bundles, m.FBCDigest, out)
	return nil
}
