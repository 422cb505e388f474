// Command catalogsync syncs Operator catalogs from OCI images into object
// storage and serves them.
//
//	catalogsync sync  --name NAME --image REF [--store DIR]   one-shot sync
//	catalogsync serve [--config FILE] [--store DIR]           long-running service
//	catalogsync version                                      build version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
)

const (
	// defaultSyncMemoryLimit sits above a sync's live heap, 14-16 MB at
	// its peak for 222 MB (the whole catalog's validation facts), where
	// the GC runs no more often than at the 36 MiB limit before the parse
	// buffers were bounded: 23 GCs against 30; 26 MiB took 38.
	defaultSyncMemoryLimit = 28 << 20
)

func main() {
	samplePeakAnon()
	ctx := cli.StopOnSignal("catalogsync")
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	reportPeakRSS(os.Stderr)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Loggers, progress observers and the pipeline write to stderr from
	// several goroutines; a caller's writer (a test's buffer) may not be
	// safe for that.
	stderr = &lockedWriter{w: stderr}
	return cli.ExitCode(stderr, "catalogsync", execute(ctx, args, stdout, stderr))
}

// execute parses args (every setting checked, see settings.go) and runs
// the command they select.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		// Help ends the parse with the exit code kong asks for.
		if r := recover(); r != nil {
			exit, ok := r.(errExit)
			if !ok {
				panic(r)
			}
			err = exit
		}
	}()
	if len(args) > 0 && args[0] == "help" {
		args = []string{"--help"}
	}
	var c commands
	kctx, from, err := parse(&c, args, stdout, stderr)
	if err != nil {
		return err
	}
	switch kctx.Selected().Name {
	case "sync":
		return c.Sync.run(ctx, from, stdout, stderr)
	case "serve":
		if err := c.Serve.checkBaseURL(); err != nil {
			return err
		}
		return c.Serve.run(ctx, from, stderr)
	case "gc":
		return c.GC.run(ctx, from, stdout, stderr)
	case "agent":
		return c.Agent.run(ctx, from, stderr)
	case "poll":
		return c.Poll.run(ctx, from, stdout, stderr)
	case "index":
		return c.Index.run(ctx, stdout)
	case "docs":
		return c.Docs.run(stdout)
	case "version":
		return c.Version.run(stdout)
	}
	return usageError{Msg: "unknown command " + kctx.Command()}
}

// The command line's kinds, as internal/cli names them.
type (
	usageError = cli.UsageError
	origins    = cli.Origins
	errExit    = cli.Exit
)

// checkBaseURL refuses --clustercatalogs without a usable --base-url
// before any cluster is looked for: a missing flag is the first mistake
// to name.
func (c *serveCmd) checkBaseURL() error {
	if !c.ClusterCatalogs {
		return nil
	}
	return c.baseURLFlag.check("--clustercatalogs", "the external URL of this service (e.g. https://catalogsync.example.com)")
}

// check refuses a missing or unusable --base-url for who (the flag or
// command that needs it); what says what the URL is for them.
func (f baseURLFlag) check(who, what string) error {
	if f.BaseURL == "" {
		return usageError{Msg: who + " needs --base-url: " + what + ", which ClusterCatalog status reports"}
	}
	if u, err := url.Parse(f.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{Msg: fmt.Sprintf("%s needs --base-url as an http(s) URL with a host, not %q", who, truncate.Text(f.BaseURL, 200))}
	}
	return nil
}

// nameProblem says why name is not a catalog name: a DNS-1123 subdomain.
func nameProblem(name string) string {
	if lower := strings.ToLower(name); lower != name {
		if catalog.ValidName(lower) {
			return fmt.Sprintf("a catalog name must be lowercase; %q would do", lower)
		}
		return "a catalog name must be lowercase: a DNS-1123 subdomain (a-z, 0-9, '-' and '.', at most 253 characters)"
	}
	return "a catalog name is a DNS-1123 subdomain: a-z, 0-9, '-' and '.', starting and ending with a letter or digit, at most 253 characters"
}

func (c *commonFlags) hosts(extra []source.Host) []source.Host {
	hosts := append([]source.Host(nil), extra...)
	for _, h := range splitList(c.PlainHTTP) {
		hosts = append(hosts, source.Host{Name: h, PlainHTTP: true})
	}
	for _, h := range splitList(c.Insecure) {
		hosts = append(hosts, source.Host{Name: h, InsecureSkipVerify: true})
	}
	return hosts
}

func (c *commonFlags) pipeline(log *slog.Logger, store storage.Store, extraHosts []source.Host, opts ...pipeline.Option) (*pipeline.Pipeline, *source.Client, error) {
	mirrors, err := c.registriesConf()
	if err != nil {
		return nil, nil, err
	}
	src, err := source.New(
		source.WithPlatform(c.Platform),
		source.WithHosts(c.hosts(extraHosts)...),
		source.WithDockerConfig(!c.NoDocker),
		source.WithLogger(log),
		source.WithStallTimeout(c.Stall),
		source.WithLocalSources(!c.noLocal),
		source.WithCAFile(c.CAFile), source.WithCADir(c.CADir), source.WithCredentials(c.creds),
		source.WithRegistriesConf(mirrors), source.WithMirrors(c.mirrors),
	)
	if err != nil {
		return nil, nil, err
	}
	if len(c.sigs.rules) > 0 || len(c.sigs.catalogs) > 0 {
		pol, err := sigpolicy.New(src, c.sigs.rules, c.sigs.catalogs)
		if err != nil {
			src.Close()
			return nil, nil, err
		}
		opts = append(opts, pipeline.WithSignatureCheck(pol))
	}
	return pipeline.New(src, store, append([]pipeline.Option{pipeline.WithTempDir(c.TmpDir), pipeline.WithLogger(log), pipeline.WithReplica(replicaID(c.Replica)), pipeline.WithVerifyReuse(c.VerifyReuse), pipeline.WithStaticLayout(c.Static)}, opts...)...), src, nil
}

func openStore(dir string) (storage.Store, string, error) {
	if dir == "" {
		dir = cli.DefaultStore
	}
	s, err := fs.New(dir)
	if err != nil {
		return nil, dir, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, dir, nil
}

// syncCmd syncs one catalog and exits.
type syncCmd struct {
	commonFlags     `embed:""`
	configFlag      `embed:""`
	pullSecretFlags `embed:""`
	Name            string `name:"name" help:"catalog name (DNS-1123); with --config, a catalog of the file, whose image --image may replace"`
	Image           string `name:"image" help:"image reference: host/repo:tag, host/repo@sha256:…, or ocidir://path:tag"`
}

func (c *syncCmd) run(ctx context.Context, from origins, stdout, stderr io.Writer) error {
	cfg, cat, err := c.catalog()
	if err != nil {
		return err
	}
	log := c.Logger(stderr)
	// A one-shot sync holds a few files and the catalog's small index at a
	// time; a soft limit makes the GC keep the heap near that instead of
	// letting it double. The user's GOMEMLIMIT wins.
	if envValue(envMemLimit) == "" {
		debug.SetMemoryLimit(defaultSyncMemoryLimit)
	}
	store, dir, err := openFrom(ctx, c.Storage, from, c.TmpDir, c.S3Concurrency)
	if err != nil {
		return err
	}
	defer storage.Close(store)

	// The progress observer reports every phase; the pipeline's own log
	// would say the same again, so it only speaks up for warnings.
	plLog := log
	if log.Enabled(ctx, slog.LevelInfo) && !log.Enabled(ctx, slog.LevelDebug) {
		plLog = slog.New(withoutSyncFailed{truncate.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}
	// The file's registries, signature policy and the pull secret, as
	// serve applies them: a scheduled sync publishes what serve would.
	c.sigs = cfg.signatures()
	if c.creds, err = startPullSecret(ctx, c.PullSecret, c.Kubeconfig, log); err != nil {
		return err
	}
	pl, src, err := c.pipeline(plLog, store, cfg.Registries)
	if err != nil {
		return err
	}
	defer src.Close()

	obs, done := progressObserver(stderr, log)
	res, err := pl.Run(ctx, cat, obs)
	// Let the last progress line print before the summary.
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	if err != nil {
		return deniedStore(err, dir)
	}
	return printSummary(ctx, stdout, store, dir, res)
}

// deniedStore makes a sync that failed because the store refuses this
// process's writes a terminal error naming the store: running the same
// command again fails the same way until an operator fixes it.
func deniedStore(err error, dir string) error {
	if !errors.Is(err, storage.ErrDenied) {
		return err
	}
	phase, cause := pipeline.PhaseResolving, err
	if se, ok := pipeline.AsError(err); ok {
		phase, cause = se.Phase, se.Err
	}
	return &pipeline.Error{Phase: phase, Reason: pipeline.ReasonStorage, Err: fmt.Errorf(
		"store %s refuses this process's writes (permissions or a read-only mount): not worth retrying until that is fixed: %w", dir, cause)}
}

// progressObserver shows a sync's progress: a bar on a terminal, else log
// lines. done closes when the last is written.
func progressObserver(stderr io.Writer, log *slog.Logger) (obs pipeline.Observer, done chan struct{}) {
	if f, ok := unwrapWriter(stderr).(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b := newBar(stderr)
		return b, b.done
	}
	o := newLogObserver(log)
	return o, o.done
}

// printSummary says what is stored, so a user sees where the catalog went.
func printSummary(ctx context.Context, w io.Writer, store storage.Store, dir string, res pipeline.Result) error {
	fmt.Fprintf(w, "catalog %q: %s %s (%s)\n", res.Catalog, res.Action, res.Digest, res.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "  image       %s\n  resolved    %s\n", res.Image, res.ResolvedRef)
	if res.Mirror != "" {
		fmt.Fprintf(w, "  mirror      %s\n", res.Mirror)
	}
	if res.VerifiedBy != "" {
		fmt.Fprintf(w, "  verified    %s\n", res.VerifiedBy)
	}
	m := res.Meta
	fmt.Fprintf(w, "  objects     %d (%s)\n", m.Objects, formatCounts(m.Schemas))
	if m.SHA256 != "" {
		fmt.Fprintf(w, "  size        %d bytes, sha256 %s\n", m.Size, m.SHA256)
	} else {
		n := len(m.Sources())
		fmt.Fprintf(w, "  size        %d bytes (shared content: %d extents, lines of %d earlier %s)\n",
			m.Size, len(m.Extents), n, map[bool]string{true: "digest", false: "digests"}[n == 1])
	}
	if res.Action == pipeline.ActionPublished {
		fmt.Fprintf(w, "  files       %d (%d reused)\n", res.Files, res.FilesReused)
	}
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

type pollCmd struct {
	commonFlags     `embed:""`
	configFlag      `embed:""`
	pullSecretFlags `embed:""`
}

// run syncs, once, every configured catalog whose poll is due (from
// the last poll recorded in storage), for a Kubernetes CronJob or any
// scheduler without a long-running process. It fails if any sync failed.
func (c *pollCmd) run(ctx context.Context, from origins, stdout, stderr io.Writer) error {
	if c.Config == "" {
		return usageError{Msg: "poll needs --config"}
	}
	log := c.Logger(stderr)
	cfg, err := c.load()
	if err != nil {
		return err
	}
	store, _, err := openFrom(ctx, c.Storage, from, c.TmpDir, c.S3Concurrency)
	if err != nil {
		return err
	}
	defer storage.Close(store)
	c.sigs = cfg.signatures()
	if c.creds, err = startPullSecret(ctx, c.PullSecret, c.Kubeconfig, log); err != nil {
		return err
	}
	pl, src, err := c.pipeline(log, store, cfg.Registries)
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
