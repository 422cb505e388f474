package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// s3Flags are the --s3-* flags, defaulting to the CATALOGSYNC_S3_*
// environment. Credentials come from the SDK's default chain
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...), never from flags.
type s3Flags struct {
	cfg    s3.Config
	envErr error // a malformed variable, reported only if S3 is used
}

func registerS3Flags(fset *flag.FlagSet) *s3Flags {
	f := &s3Flags{}
	f.cfg, f.envErr = s3.ConfigFromEnv()
	f.cfg.RegisterFlags(fset)
	return f
}

// openS3FromFlags opens the bucket the flags name. s3.New checks bucket,
// credentials and write access, so a command fails at once, and clearly,
// on a bad setup.
func openS3FromFlags(ctx context.Context, f *s3Flags) (*s3.Store, error) {
	if f.envErr != nil {
		return nil, usageError{f.envErr.Error()}
	}
	s, err := s3.New(ctx, f.cfg)
	if err != nil {
		if errors.Is(err, s3.ErrConfig) {
			return nil, usageError{err.Error()}
		}
		return nil, fmt.Errorf("open store %s: %w", s3Location(f.cfg), err)
	}
	return s, nil
}

func s3Location(c s3.Config) string {
	loc := "s3://" + c.Bucket
	if p := strings.Trim(c.Prefix, "/"); p != "" {
		loc += "/" + p
	}
	if c.Endpoint != "" {
		loc += " at " + c.Endpoint
	}
	return loc
}

// openStoreFromFlags opens S3 when a bucket is configured, else the local
// directory dir (default .catalogsync/store). It returns the store and a
// description of where it is, for messages.
func openStoreFromFlags(ctx context.Context, dir string, f *s3Flags) (storage.Store, string, error) {
	if !f.cfg.Enabled() {
		return openStore(dir)
	}
	if dir != "" {
		return nil, "", usageError{fmt.Sprintf("both a store directory (%s) and an S3 bucket (%s) are configured; choose one", dir, f.cfg.Bucket)}
	}
	s, err := openS3FromFlags(ctx, f)
	if err != nil {
		return nil, "", err
	}
	return s, s3Location(f.cfg), nil
}

// parseBytes reads a byte count: a plain number or one with a K, M, G or
// T suffix (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a byte count like 5000000000, 5G or 4.5Gi", s)
	}
	return int64(n * float64(mult)), nil
}

const gcUsage = `usage: catalogsync gc [--store DIR | --s3-bucket B ...] [--keep N] [--max-inactive-bytes N]
                      [--grace DURATION] [--dry-run] [--config FILE]

Deletes catalog content no longer needed: non-current digests beyond the
newest --keep per catalog, the least recent beyond --max-inactive-bytes,
incomplete content, interrupted uploads, and with --config the catalogs it
no longer lists. Nothing is deleted before it has been out of reach for
--grace, so readers that found it finish.

`

// cmdGC runs catalog.GC once over the selected store and prints what it
// deleted and kept.
func cmdGC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("gc", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), gcUsage)
		fset.PrintDefaults()
	}
	dir := fset.String("store", envOr("CATALOGSYNC_STORE", ""), "local directory of the store (env CATALOGSYNC_STORE; default "+defaultStore+")")
	s3f := registerS3Flags(fset)
	cfgPath := fset.String("config", envOr("CATALOGSYNC_CONFIG", ""), "serve's catalogs file: catalogs it does not list are deleted (without it, no catalog is) (env CATALOGSYNC_CONFIG)")
	keep := fset.Int("keep", catalog.DefaultKeep, "non-current digests kept per catalog besides the current one")
	maxInactive := fset.String("max-inactive-bytes", "0", "cap on non-current content over all catalogs, least recent deleted first: bytes, or with K/M/G/Ki/Mi/Gi (0: no cap)")
	grace := fset.Duration("grace", catalog.DefaultGrace, "how long content must be out of reach before it is deleted (0: no wait)")
	unconf := fset.Duration("unconfigured-age", catalog.DefaultUnconfiguredAge, "with --config: how long a catalog it does not list must have been untouched by every replica (no publish, poll or mark) before it is deleted (0: the grace period alone)")
	leftoverAge := fset.Duration("leftover-age", catalog.DefaultLeftoverAge, "age from which interrupted uploads and temp files are removed (0: any age, even uploads in progress)")
	dryRun := fset.Bool("dry-run", false, "print what would be deleted; delete nothing")
	asJSON := fset.Bool("json", false, "print the report as JSON")
	logLevel := fset.String("log-level", envOr("CATALOGSYNC_LOG_LEVEL", "info"), "debug, info, warn or error (env CATALOGSYNC_LOG_LEVEL)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fset.NArg() > 0 {
		return usageError{"gc takes no arguments"}
	}
	maxBytes, err := parseBytes(*maxInactive)
	if err != nil {
		return usageError{"--max-inactive-bytes: " + err.Error()}
	}
	if *keep < 0 || *grace < 0 || *leftoverAge < 0 || *unconf < 0 {
		return usageError{"--keep, --grace, --unconfigured-age and --leftover-age must not be negative"}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	// GCOptions' zero values mean "default"; here 0 means 0.
	opts := catalog.GCOptions{
		Keep: *keep, MaxInactiveBytes: maxBytes, Grace: *grace, LeftoverAge: *leftoverAge, UnconfiguredAge: *unconf,
		DryRun: *dryRun, Log: log,
	}
	if opts.Keep == 0 {
		opts.Keep = -1
	}
	if opts.Grace == 0 {
		opts.Grace = -1
	}
	if opts.LeftoverAge == 0 {
		opts.LeftoverAge = -1
	}
	if opts.UnconfiguredAge == 0 {
		opts.UnconfiguredAge = -1
	}
	if *cfgPath != "" {
		cfg, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		if len(cfg.Catalogs) == 0 {
			return fmt.Errorf("%s lists no catalogs: gc would delete them all; remove the store instead", *cfgPath)
		}
		opts.Catalogs = []string{}
		for _, c := range cfg.Catalogs {
			opts.Catalogs = append(opts.Catalogs, c.Name)
		}
		if *dir == "" && !s3f.cfg.Enabled() {
			*dir = cfg.Storage.Dir
		}
	}
	store, where, err := openStoreFromFlags(ctx, *dir, s3f)
	if err != nil {
		return err
	}
	defer closeStore(store)

	rep, gcErr := catalog.GC(ctx, store, opts)
	if *asJSON {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", action, it.Catalog, what, gcBytes(it.Bytes), it.Reason, since)
	}
	for _, it := range rep.Deleted {
		line(deleted, it)
	}
	for _, it := range rep.Kept {
		line("kept", it)
	}
	tw.Flush()
	fmt.Fprintf(w, "%s %d (%s), kept %d (%s), non-current content left %s\n",
		deleted, len(rep.Deleted), gcBytes(rep.DeletedBytes), len(rep.Kept), gcBytes(rep.KeptBytes), gcBytes(rep.InactiveBytes))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
}

func gcBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
