package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// openS3 opens the bucket the flags name. s3.New checks bucket,
// credentials and write access, so a command fails at once, and clearly,
// on a bad setup.
func openS3(ctx context.Context, c s3.Config) (*s3.Store, error) {
	s, err := s3.New(ctx, c)
	if err != nil {
		if errors.Is(err, s3.ErrConfig) {
			return nil, usageError{Msg: err.Error()}
		}
		return nil, fmt.Errorf("open store %s: %w", c.Location(), err)
	}
	return s, nil
}

// openFrom opens S3 when a bucket is configured, else the local directory
// (default .catalogsync/store). It returns the store and a description of
// where it is, for messages. S3 uploads keep their parts in tmpDir ("" is
// the system's) and send concurrency of them at once (0: the default).
func openFrom(ctx context.Context, f cli.Storage, from origins, tmpDir string, concurrency int) (storage.Store, string, error) {
	dir, err := f.LocalDir(from)
	if err != nil {
		return nil, "", err
	}
	if dir != "" {
		return openStore(dir)
	}
	cfg := f.S3.Config()
	cfg.TempDir, cfg.Concurrency = tmpDir, concurrency
	s, err := openS3(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	return s, cfg.Location(), nil
}

// gcCmd runs catalog.GC once over the selected store.
type gcCmd struct {
	cli.Logging `embed:""`
	cli.Storage `embed:"" group:"store"`
	configFlag  `embed:""`
	Keep        int           `name:"keep" defaultvar:"keep" check:"nonneg" help:"non-current digests kept per catalog besides the current one (and any whose lines kept content shares)"`
	MaxInactive string        `name:"max-inactive-bytes" default:"0" check:"bytes" help:"cap on non-current content over all catalogs, least recent deleted first: bytes, or with K/M/G/Ki/Mi/Gi (0: no cap)"`
	Grace       time.Duration `name:"grace" defaultvar:"grace" check:"nonneg" help:"how long content must be out of reach before it is deleted (0: no wait)"`
	Unconf      time.Duration `name:"unconfigured-age" defaultvar:"unconfigured" check:"nonneg" help:"with --config: how long a catalog it does not list must have been untouched by every replica (no publish, poll or mark) before it is deleted (0: the grace period alone)"`
	LeftoverAge time.Duration `name:"leftover-age" defaultvar:"leftover" check:"nonneg" help:"age from which interrupted uploads and temp files are removed (0: any age, even uploads in progress)"`
	DryRun      bool          `name:"dry-run" help:"print what would be deleted; delete nothing"`
	JSON        bool          `name:"json" help:"print the report as JSON"`
}

// Help is gc's description in its -h.
func (c *gcCmd) Help() string {
	return `Deletes catalog content no longer needed: non-current digests beyond the
newest --keep per catalog, the least recent beyond --max-inactive-bytes,
incomplete content, interrupted uploads, and with --config the catalogs it
no longer lists. Nothing is deleted before it has been out of reach for
--grace, so readers that found it finish.`
}

// options maps the flags to GCOptions, whose zero values mean "default":
// here 0 means 0.
func (c *gcCmd) options(log *slog.Logger) catalog.GCOptions {
	maxBytes, _ := cli.ParseBytes(c.MaxInactive) // checked
	o := catalog.GCOptions{
		Keep: c.Keep, MaxInactiveBytes: maxBytes, Grace: c.Grace, LeftoverAge: c.LeftoverAge, UnconfiguredAge: c.Unconf,
		DryRun: c.DryRun, Log: log,
	}
	if o.Keep == 0 {
		o.Keep = -1
	}
	for _, d := range []*time.Duration{&o.Grace, &o.LeftoverAge, &o.UnconfiguredAge} {
		if *d == 0 {
			*d = -1
		}
	}
	return o
}

// run prints what GC deleted and kept.
func (c *gcCmd) run(ctx context.Context, from origins, stdout, stderr io.Writer) error {
	opts := c.options(c.Logger(stderr))
	if c.Config != "" {
		cfg, err := c.load()
		if err != nil {
			return err
		}
		if len(cfg.Catalogs) == 0 {
			return fmt.Errorf("%s lists no catalogs: gc would delete them all; remove the store instead", c.Config)
		}
		opts.Catalogs = []string{}
		for _, cc := range cfg.Catalogs {
			opts.Catalogs = append(opts.Catalogs, cc.Name)
		}
	}
	store, where, err := openFrom(ctx, c.Storage, from, "", 0)
	if err != nil {
		return err
	}
	defer storage.Close(store)

	rep, gcErr := catalog.GC(ctx, store, opts)
	if c.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printGCReport(stdout, where, rep)
	}
	if gcErr != nil {
		return fmt.Errorf("gc of %s stopped: %w", where, gcErr)
	}
	return nil
}

// printGCReport writes one line per deleted and kept item, then totals.
func printGCReport(w io.Writer, where string, rep catalog.GCReport) {
	deleted := "deleted"
	if rep.DryRun {
		deleted = "would delete"
		fmt.Fprintf(w, "gc of %s, dry run: nothing is deleted\n", where)
	} else {
		fmt.Fprintf(w, "gc of %s\n", where)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(action string, it catalog.GCItem) {
		what := it.Digest
		switch {
		case it.Reason == catalog.GCLeftover:
			what = strings.Join(it.Keys, " ")
		case what == "":
			what = "(whole catalog)"
		}
		since := ""
		if !it.InactiveSince.IsZero() {
			since = "inactive since " + it.InactiveSince.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", action, it.Catalog, what, humanBytes(it.Bytes), it.Reason, since)
	}
	for _, it := range rep.Deleted {
		line(deleted, it)
	}
	for _, it := range rep.Kept {
		line("kept", it)
	}
	tw.Flush()
	fmt.Fprintf(w, "%s %d (%s), kept %d (%s), non-current content left %s\n",
		deleted, len(rep.Deleted), humanBytes(rep.DeletedBytes), len(rep.Kept), humanBytes(rep.KeptBytes), humanBytes(rep.InactiveBytes))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
}
