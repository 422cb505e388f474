// Command catalogsync syncs Operator catalogs from OCI images into object
// storage and serves them.
//
//	catalogsync sync  --name NAME --image REF [--store DIR]   one-shot sync
//	catalogsync serve [--config FILE] [--store DIR]           long-running service
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
)

const (
	defaultStore           = ".catalogsync/store"
	defaultSyncMemoryLimit = 40 << 20
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal starts a graceful stop; a second one ends the
		// process at once, as an operator pressing ^C twice expects.
		<-sigs
		cancel()
		s := <-sigs
		fmt.Fprintf(os.Stderr, "catalogsync: second %s: exiting now\n", s)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	reportPeakRSS(os.Stderr)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Loggers, progress observers and the pipeline write to stderr from
	// several goroutines; a caller's writer (a test's buffer) may not be
	// safe for that.
	stderr = &lockedWriter{w: stderr}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "sync":
		err = cmdSync(ctx, args[1:], stdout, stderr)
	case "serve":
		err = cmdServe(ctx, args[1:], stderr)
	case "gc":
		err = cmdGC(ctx, args[1:], stdout, stderr)
	case "poll":
		err = cmdPoll(ctx, args[1:], stdout, stderr)
	case "index":
		err = cmdIndex(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "catalogsync: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "catalogsync:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "catalogsync:", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  catalogsync sync  --name NAME --image REF [--store DIR] [flags]   sync one catalog and exit
  catalogsync serve [--config FILE] [--store DIR] [--addr ADDR]    keep catalogs synced and serve them
  catalogsync gc    [--store DIR] [--keep N] [--grace D] [--dry-run]  delete content no longer needed
  catalogsync poll  --config FILE [--store DIR]                      sync the catalogs that are due, then exit (CronJob)
  catalogsync index [--out DIR] FBC_DIR                              validate an FBC directory and pre-build its catalog and index
Every command takes --store DIR (local) or --s3-bucket B (S3/MinIO, see --s3-*).
Run "catalogsync CMD -h" for a command's flags.
`)
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// commonFlags are the flags that configure how images are read and where
// catalogs are stored.
type commonFlags struct {
	store     string
	platform  string
	plainHTTP string
	insecure  string
	tmpDir    string
	logLevel  string
	noDocker  bool
	replica   string
	stall     time.Duration
	// noLocal refuses ocidir:// references (serve, for ClusterCatalogs).
	noLocal bool
	caFile  string
	caDir   string
	regConf string
	// creds are extra registry credentials (serve: the pull secret).
	creds source.CredentialProvider
	// sigRules require signatures (the config file's signaturePolicy).
	sigRules []sigpolicy.Rule
}

func (c *commonFlags) register(fset *flag.FlagSet) {
	fset.StringVar(&c.store, "store", envOr("CATALOGSYNC_STORE", ""), "local directory for stored catalogs (env CATALOGSYNC_STORE; default "+defaultStore+")")
	fset.StringVar(&c.platform, "platform", envOr("CATALOGSYNC_PLATFORM", "linux/amd64"), "platform picked from multi-platform images (env CATALOGSYNC_PLATFORM)")
	fset.StringVar(&c.plainHTTP, "plain-http", envOr("CATALOGSYNC_PLAIN_HTTP", ""), "comma-separated registry hosts reached over plain HTTP (env CATALOGSYNC_PLAIN_HTTP)")
	fset.StringVar(&c.insecure, "insecure-skip-tls-verify", envOr("CATALOGSYNC_INSECURE_HOSTS", ""), "comma-separated registry hosts whose TLS certificate is not verified (env CATALOGSYNC_INSECURE_HOSTS)")
	fset.StringVar(&c.tmpDir, "tmp-dir", envOr("CATALOGSYNC_TMP_DIR", ""), "directory for the spool file while a sync runs (env CATALOGSYNC_TMP_DIR; default the system temp dir)")
	fset.StringVar(&c.logLevel, "log-level", envOr("CATALOGSYNC_LOG_LEVEL", "info"), "debug, info, warn or error (env CATALOGSYNC_LOG_LEVEL)")
	fset.BoolVar(&c.noDocker, "no-docker-config", false, "do not read registry credentials from the docker config")
	fset.DurationVar(&c.stall, "stall-timeout", envDuration("CATALOGSYNC_STALL_TIMEOUT", source.DefaultStallTimeout), "how long a registry may send nothing (no response, no byte of a layer) before the attempt fails and is retried (env CATALOGSYNC_STALL_TIMEOUT)")
	fset.StringVar(&c.caFile, "ca-file", envOr("CATALOGSYNC_CA_FILE", ""), "PEM bundle of CAs trusted for every registry besides the system's, read again when it changes (env CATALOGSYNC_CA_FILE)")
	fset.StringVar(&c.caDir, "ca-dir", envOr("CATALOGSYNC_CA_DIR", ""), "directory of PEM CA files (*.crt, *.pem) trusted for every registry, as catalogd's --pull-cas-dir; read again when it changes (env CATALOGSYNC_CA_DIR)")
	fset.StringVar(&c.regConf, "registries-conf", envOr("CATALOGSYNC_REGISTRIES_CONF", regconf.DefaultPath), "containers registries.conf (v2) with mirrors and blocked registries, plus its .d drop-in directory; the default is read only when present, \"\" reads none (env CATALOGSYNC_REGISTRIES_CONF)")
	fset.StringVar(&c.replica, "replica-id", envOr("CATALOGSYNC_REPLICA_ID", ""), "this replica's name in the store's sync leases and logs; a lease belongs to one process whatever its name (env CATALOGSYNC_REPLICA_ID; default $POD_NAME, else the host name)")
}

func (c *commonFlags) hosts(extra []source.Host) []source.Host {
	hosts := append([]source.Host(nil), extra...)
	for _, h := range splitList(c.plainHTTP) {
		hosts = append(hosts, source.Host{Name: h, PlainHTTP: true})
	}
	for _, h := range splitList(c.insecure) {
		hosts = append(hosts, source.Host{Name: h, InsecureSkipVerify: true})
	}
	return hosts
}

func (c *commonFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
}

func (c *commonFlags) pipeline(log *slog.Logger, store storage.Store, extraHosts []source.Host, opts ...pipeline.Option) (*pipeline.Pipeline, *source.Source, error) {
	mirrors, err := c.registriesConf()
	if err != nil {
		return nil, nil, err
	}
	src, err := source.New(
		source.WithPlatform(c.platform),
		source.WithHosts(c.hosts(extraHosts)...),
		source.WithDockerConfig(!c.noDocker),
		source.WithLogger(log),
		source.WithStallTimeout(c.stall),
		source.WithLocalSources(!c.noLocal),
		source.WithCAFile(c.caFile), source.WithCADir(c.caDir), source.WithCredentials(c.creds),
		source.WithRegistriesConf(mirrors),
	)
	if err != nil {
		return nil, nil, err
	}
	if len(c.sigRules) > 0 {
		pol, err := sigpolicy.New(src, c.sigRules)
		if err != nil {
			src.Close()
			return nil, nil, err
		}
		opts = append(opts, pipeline.WithSignatureCheck(pol))
	}
	return pipeline.New(src, store, append([]pipeline.Option{pipeline.WithTempDir(c.tmpDir), pipeline.WithLogger(log), pipeline.WithReplica(replicaID(c.replica))}, opts...)...), src, nil
}

func openStore(dir string) (storage.Store, string, error) {
	if dir == "" {
		dir = defaultStore
	}
	s, err := fs.New(dir)
	if err != nil {
		return nil, dir, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, dir, nil
}

// closeStore releases a store's handles, for backends that hold any.
func closeStore(s storage.Store) {
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
}

func cmdSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("sync", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var cf commonFlags
	cf.register(fset)
	s3f := registerS3Flags(fset)
	name := fset.String("name", "", "catalog name (DNS-1123)")
	image := fset.String("image", "", "image reference: host/repo:tag, host/repo@sha256:…, or ocidir://path:tag")
	if err := fset.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *name == "" || *image == "" || fset.NArg() > 0 {
		return usageError{"sync needs --name and --image"}
	}
	if !catalog.ValidName(*name) {
		return usageError{fmt.Sprintf("--name %q: a catalog name is a DNS-1123 subdomain of at most 253 characters", *name)}
	}
	log, err := cf.logger(stderr)
	if err != nil {
		return err
	}
	// A one-shot sync holds a few files and the catalog's small index at a
	// time; a soft limit makes the GC keep the heap near that instead of
	// letting it double. The user's GOMEMLIMIT wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultSyncMemoryLimit)
	}
	store, dir, err := openStoreFromFlags(ctx, cf.store, s3f)
	if err != nil {
		return err
	}
	defer closeStore(store)

	// The progress observer reports every phase; the pipeline's own log
	// would say the same again, so it only speaks up for warnings.
	plLog := log
	if log.Enabled(ctx, slog.LevelInfo) && !log.Enabled(ctx, slog.LevelDebug) {
		plLog = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	pl, src, err := cf.pipeline(plLog, store, nil)
	if err != nil {
		return err
	}
	defer src.Close()

	var obs pipeline.Observer
	var done chan struct{}
	if f, ok := unwrapWriter(stderr).(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b := newBar(stderr)
		obs, done = b, b.done
	} else {
		o := newLogObserver(log)
		obs, done = o, o.done
	}
	res, err := pl.Run(ctx, pipeline.Catalog{Name: *name, Image: *image}, obs)
	// Let the last progress line print before the summary.
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	if err != nil {
		return err
	}
	return printSummary(ctx, stdout, store, dir, res)
}

// printSummary says what is stored, so a user sees where the catalog went.
func printSummary(ctx context.Context, w io.Writer, store storage.Store, dir string, res pipeline.Result) error {
	fmt.Fprintf(w, "catalog %q: %s %s (%s)\n", res.Catalog, res.Action, res.Digest, res.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "  image       %s\n  resolved    %s\n", res.Image, res.ResolvedRef)
	m := res.Meta
	fmt.Fprintf(w, "  objects     %d (%s)\n", m.Objects, formatCounts(m.Schemas))
	fmt.Fprintf(w, "  size        %d bytes, sha256 %s\n", m.Size, m.SHA256)
	var phases []string
	for _, ph := range []pipeline.Phase{pipeline.PhaseResolving, pipeline.PhasePulling, pipeline.PhaseUnpacking, pipeline.PhaseValidating, pipeline.PhaseIndexing, pipeline.PhasePublishing} {
		if d, ok := res.Phases[ph]; ok {
			phases = append(phases, fmt.Sprintf("%s %s", strings.ToLower(string(ph)), d.Round(time.Millisecond)))
		}
	}
	fmt.Fprintf(w, "  phases      %s\n", strings.Join(phases, ", "))
	key, err := catalog.ContentKey(res.Catalog, res.Digest)
	if err != nil {
		return err
	}
	infos, err := store.List(ctx, path.Dir(key)+"/")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stored under %s:\n", dir)
	for _, in := range infos {
		fmt.Fprintf(w, "  %-90s %10d\n", in.Key, in.Size)
	}
	if ptr, _, err := catalog.Current(ctx, store, res.Catalog); err == nil {
		fmt.Fprintf(w, "  %-90s -> %s\n", catalog.PointerKey(res.Catalog), ptr.Digest)
	}
	return nil
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range []string{"olm.package", "olm.channel", "olm.bundle"} {
		if n, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.TrimPrefix(k, "olm.")+"s"))
		}
	}
	var others int
	for k, n := range m {
		if k != "olm.package" && k != "olm.channel" && k != "olm.bundle" {
			others += n
		}
	}
	if others > 0 {
		parts = append(parts, fmt.Sprintf("%d others", others))
	}
	return strings.Join(parts, ", ")
}

// cmdPoll syncs, once, every configured catalog whose poll is due (from
// the last poll recorded in storage), for a Kubernetes CronJob or any
// scheduler without a long-running process. It fails if any sync failed.
func cmdPoll(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("poll", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var cf commonFlags
	cf.register(fset)
	s3f := registerS3Flags(fset)
	cfgPath := fset.String("config", envOr("CATALOGSYNC_CONFIG", ""), "YAML file listing catalogs (env CATALOGSYNC_CONFIG)")
	if err := fset.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *cfgPath == "" || fset.NArg() > 0 {
		return usageError{"poll needs --config"}
	}
	log, err := cf.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if cf.store == "" && !s3f.cfg.Enabled() {
		cf.store = cfg.Storage.Dir
	}
	store, _, err := openStoreFromFlags(ctx, cf.store, s3f)
	if err != nil {
		return err
	}
	defer closeStore(store)
	cf.sigRules = cfg.SignaturePolicy
	pl, src, err := cf.pipeline(log, store, cfg.Registries)
	if err != nil {
		return err
	}
	defer src.Close()
	eng := engine.New(pl, engine.StaticCatalogs(cfg.catalogs()), store)
	var failed []string
	for _, c := range cfg.catalogs() {
		due, err := eng.Due(ctx, c)
		if err != nil {
			failed = append(failed, c.Name)
			fmt.Fprintf(stdout, "%s: %v\n", c.Name, err)
			continue
		}
		if !due {
			fmt.Fprintf(stdout, "%s: not due\n", c.Name)
			continue
		}
		res, err := pl.Run(ctx, c)
		if err != nil {
			failed = append(failed, c.Name)
			fmt.Fprintf(stdout, "%s: %v\n", c.Name, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: %s %s\n", c.Name, res.Action, res.Digest)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d catalog(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func envFloat(k string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return d
	}
	return def
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok && v != "" {
		return v
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// unwrapWriter returns the writer under a lockedWriter, to tell a terminal.
func unwrapWriter(w io.Writer) io.Writer {
	if l, ok := w.(*lockedWriter); ok {
		return l.w
	}
	return w
}
