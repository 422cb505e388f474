package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/catalogsync/catalogsync/sync/buildindex"
)

// cmdIndex validates an FBC directory and writes a pre-built index for a
// catalog image's build stage (see docs/build-time-index.md).
func cmdIndex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("index", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("out", "", "directory to write the index to (default: catalogsync-index beside DIR)")
	if err := fset.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fset.NArg() != 1 {
		return usageError{"index takes one argument: the FBC directory"}
	}
	dir := filepath.Clean(fset.Arg(0))
	if *out == "" {
		// Beside, not inside: inside, the index would be part of the FBC
		// it describes.
		*out = filepath.Join(filepath.Dir(dir), "catalogsync-index")
	}
	m, err := buildindex.Build(ctx, dir, *out)
	if err != nil {
		return fmt.Errorf("index %s: %w", dir, err)
	}
	fmt.Fprintf(stdout, "indexed %s: %d objects, %d packages, %d bundles\nfbc digest %s\nwritten to %s\n",
		dir, m.Objects, m.Packages, m.Bundles, m.FBCDigest, *out)
	return nil
}
