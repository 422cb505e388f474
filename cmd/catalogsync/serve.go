package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	csync "github.com/catalogsync/catalogsync/sync"
	"github.com/catalogsync/catalogsync/sync/publishevent"
	"github.com/catalogsync/catalogsync/sync/status"
	"k8s.io/client-go/dynamic"
)

// serveFlags are serve's own flags, besides the common ones.
type serveFlags struct {
	cfgPath   string
	addr      string
	baseURL   string
	maxSyncs  int
	regRate   float64
	regBurst  int
	pollEvery time.Duration
	gcEvery   time.Duration
	gcKeep    int
	gcGrace   time.Duration
	readLimit time.Duration

	clusterCatalogs bool
	kubeconfig      string
	eventSink       string
}

func (f *serveFlags) register(fset *flag.FlagSet) {
	fset.StringVar(&f.cfgPath, "config", envOr("CATALOGSYNC_CONFIG", ""), "YAML file listing catalogs (env CATALOGSYNC_CONFIG)")
	fset.StringVar(&f.addr, "addr", envOr("CATALOGSYNC_ADDR", ":"+envOr("PORT", "8080")), "listen address (env CATALOGSYNC_ADDR, or :$PORT)")
	fset.StringVar(&f.baseURL, "base-url", envOr("CATALOGSYNC_BASE_URL", ""), "external base URL of this service, for the serving URLs it reports (env CATALOGSYNC_BASE_URL; default: from each request's Host)")
	fset.IntVar(&f.maxSyncs, "max-concurrent-syncs", envInt("CATALOGSYNC_MAX_CONCURRENT_SYNCS", 4), "syncs running at once over all catalogs (env CATALOGSYNC_MAX_CONCURRENT_SYNCS)")
	fset.Float64Var(&f.regRate, "registry-rate", envFloat("CATALOGSYNC_REGISTRY_RATE", 10), "syncs started per second against one registry host; more wait queued (env CATALOGSYNC_REGISTRY_RATE)")
	fset.IntVar(&f.regBurst, "registry-burst", envInt("CATALOGSYNC_REGISTRY_BURST", 10), "burst for --registry-rate (env CATALOGSYNC_REGISTRY_BURST)")
	fset.DurationVar(&f.pollEvery, "poll-check-interval", envDuration("CATALOGSYNC_POLL_CHECK_INTERVAL", time.Minute), "how often catalogs are checked for a due poll (env CATALOGSYNC_POLL_CHECK_INTERVAL)")
	fset.BoolVar(&f.clusterCatalogs, "clustercatalogs", os.Getenv("CATALOGSYNC_CLUSTERCATALOGS") == "true", "sync the cluster's ClusterCatalogs and write their status, instead of the config file's catalogs; needs --base-url (env CATALOGSYNC_CLUSTERCATALOGS=true)")
	fset.StringVar(&f.kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig for --clustercatalogs; the in-cluster service account when empty (env KUBECONFIG)")
	fset.StringVar(&f.eventSink, "event-sink", "", "URL that receives a CloudEvent io.catalogsync.catalog.published for each publish (env CATALOGSYNC_EVENT_SINK, else K_SINK as a Knative SinkBinding sets it)")
	fset.DurationVar(&f.gcEvery, "gc-interval", envDuration("CATALOGSYNC_GC_INTERVAL", time.Hour), "how often stored content no longer needed is deleted; 0 disables (env CATALOGSYNC_GC_INTERVAL)")
	fset.DurationVar(&f.readLimit, "read-timeout", envDuration("CATALOGSYNC_READ_TIMEOUT", 30*time.Second), "longest time to read a request, body included (env CATALOGSYNC_READ_TIMEOUT)")
	fset.IntVar(&f.gcKeep, "gc-keep", envInt("CATALOGSYNC_GC_KEEP", catalog.DefaultKeep), "non-current digests GC keeps per catalog besides the current one (env CATALOGSYNC_GC_KEEP)")
	fset.DurationVar(&f.gcGrace, "gc-grace", envDuration("CATALOGSYNC_GC_GRACE", catalog.DefaultGrace), "how long content must be out of reach before GC deletes it, so readers that found it finish (env CATALOGSYNC_GC_GRACE)")
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fset := flag.NewFlagSet("serve", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var cf commonFlags
	cf.register(fset)
	s3f := registerS3Flags(fset)
	var sf serveFlags
	sf.register(fset)
	if err := fset.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fset.NArg() > 0 {
		return usageError{"serve takes no arguments"}
	}
	log, err := cf.logger(stderr)
	if err != nil {
		return err
	}
	var cfg Config
	if sf.cfgPath != "" {
		if cfg, err = loadConfig(sf.cfgPath); err != nil {
			return err
		}
	}
	if cf.store == "" && !s3f.cfg.Enabled() {
		cf.store = cfg.Storage.Dir
	}
	if cfg.Platform != "" && cf.platform == "linux/amd64" {
		cf.platform = cfg.Platform
	}
	store, dir, err := openStoreFromFlags(ctx, cf.store, s3f)
	if err != nil {
		return err
	}
	// Every store operation is timed; the wrapper keeps Close and the GC's
	// leftover cleaning.
	m := metrics.New()
	store = m.Store(store)
	defer closeStore(store)
	// Refuse to start on a store that cannot be read: better now than at
	// the first sync. One Stat of a key that never exists (as /readyz),
	// not a List of every stored object: a process started for a request
	// waits for this.
	if _, err := store.Stat(ctx, "catalogs/.ready"); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("store %s is not usable: %w", dir, err)
	}
	// The content handler is made after the pipeline, which tells it of
	// its own publishes.
	var contentH *content.Handler
	pl, src, err := cf.pipeline(log, store, cfg.Registries, csync.WithOnPublish(func(name string) {
		if contentH != nil {
			contentH.Invalidate(name)
		}
	}))
	if err != nil {
		return err
	}
	defer src.Close()

	// The engine coalesces triggers per catalog and retries failures; the
	// scheduler is the cron fallback and does the first sync at start.
	var set csync.CatalogSet = csync.StaticCatalogs(cfg.catalogs())
	observers := []csync.Observer{m.SyncObserver()}
	if sink := publishevent.Sink(sf.eventSink); sink != "" {
		em, err := publishevent.New(sink, publishevent.WithBaseURL(sf.baseURL), publishevent.WithLogger(log))
		if err != nil {
			return usageError{err.Error()}
		}
		defer func() {
			// Give queued events a moment to leave; never hold shutdown long.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			em.Close(cctx)
		}()
		observers = append(observers, em)
	}
	cfgNames := make([]string, 0, len(cfg.Catalogs))
	for _, c := range cfg.Catalogs {
		cfgNames = append(cfgNames, c.Name)
	}
	gcNames := func() ([]string, bool) { return cfgNames, true }
	var (
		ccSrc    *status.Source
		ccWriter *status.Writer
		engine   *csync.Engine
	)
	if sf.clusterCatalogs {
		restCfg, err := status.RESTConfig(sf.kubeconfig)
		if err != nil {
			return err
		}
		dyn, err := dynamic.NewForConfig(restCfg)
		if err != nil {
			return err
		}
		ccSrc = status.NewSource(dyn, status.WithSourceLogger(log), status.WithOnChange(func(name string) {
			// Created, spec changed or deleted: sync now; the engine
			// refuses names no longer in the set (deleted, Unavailable).
			if _, err := engine.Trigger(ctx, name, "clustercatalog"); err != nil {
				log.Debug("clustercatalog change not synced", "catalog", name, "err", err)
			}
		}))
		if ccWriter, err = status.NewWriter(dyn, ccSrc, store, sf.baseURL, status.WithWriterLogger(log),
			status.WithWriterReplica(replicaID(cf.replica)), status.WithLeftAlone(m.LeftAlone())); err != nil {
			return fmt.Errorf("--clustercatalogs needs --base-url: %w", err)
		}
		set, gcNames = ccSrc, ccSrc.Names
		observers = append(observers, ccWriter)
	}
	engine = csync.NewEngine(pl, set, store,
		csync.WithMaxConcurrent(sf.maxSyncs), csync.WithRegistryRate(sf.regRate, sf.regBurst),
		csync.WithEngineLogger(log), csync.WithObservers(observers...))

	r := chi.NewRouter()
	// Both read chi's route pattern after routing, so they sit on the top
	// router.
	r.Use(m.HTTPMiddleware, api.LogRequests(log))
	// Read from the environment only: flags show in ps.
	api.New(engine, set, store,
		api.WithLogger(log), api.WithToken(os.Getenv("CATALOGSYNC_API_TOKEN")), api.WithBaseURL(sf.baseURL),
		api.WithMetrics(m.Handler()), api.WithReadyCheck(informerSynced(ccSrc)),
	).Mount(r) // /api/v1/..., /openapi.yaml, /healthz, /readyz, /metrics
	contentOpts := []content.Option{content.WithLogger(log)}
	if ccSrc != nil {
		// availabilityMode: Unavailable -> 404, as catalogd.
		contentOpts = append(contentOpts, content.WithAvailability(ccSrc.Available))
	}
	contentH = content.New(store, contentOpts...)
	contentH.Mount(r) // /catalogs/{name}/api/v1/{all,metas}
	if err := mountTriggers(r, cfg, engine, set, m, log); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		return err
	}
	// Bodies (webhooks, at most 1 MiB) are read before they are
	// authenticated: ReadTimeout keeps a client that trickles one from
	// holding a connection for ever. Responses may be large and clients
	// slow, so there is no WriteTimeout.
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: sf.readLimit, IdleTimeout: 2 * time.Minute}
	log.Info("serving", "addr", ln.Addr().String(), "store", dir, "catalogs", len(cfg.Catalogs))

	engine.Start(ctx)
	// After the engine: OnChange may trigger it from the first event.
	if ccSrc != nil {
		go ccSrc.Run(ctx)
		go ccWriter.Run(ctx)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := ccSrc.WaitForSync(wctx)
		cancel()
		if err != nil {
			return fmt.Errorf("clustercatalogs: %w", err)
		}
	}
	// Polls and GC are cluster-wide: replicas sharing the store take turns.
	holder := clusterHolder(replicaID(cf.replica))
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		runPoller(ctx, log, engine, store, holder, sf.pollEvery)
	}()
	if sf.gcEvery > 0 {
		go runGC(ctx, log, store, holder, gcNames, sf.gcEvery, sf.gcPolicy())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	<-pollDone
	engine.Wait()
	log.Info("stopped")
	return err
}

// mountTriggers adds the webhook receivers (/hooks/...) and, when
// configured, the CloudEvents endpoint (/events). Both only name what may
// have changed: the engine resolves configured catalogs' own references.
func mountTriggers(r chi.Router, cfg Config, engine *csync.Engine, set csync.CatalogSet, m *metrics.Metrics, log *slog.Logger) error {
	trig := engineTrigger{engine, log}
	lister := webhookCatalogs{set}
	if len(cfg.Webhooks.Receivers) > 0 {
		rc, err := webhook.NewReceiver(cfg.Webhooks, lister, trig, webhook.WithLogger(log), webhook.WithOutcome(m.Webhook))
		if err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		for _, ep := range rc.Endpoints() {
			r.Handle(ep.Path, rc)
		}
	}
	if cfg.Events != nil {
		h, err := events.New(*cfg.Events, lister, trig, enginePoller{engine, log}, events.WithLogger(log))
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		r.Handle("/events", h)
	}
	return nil
}

// engineTrigger adapts the engine to the receivers' fire-and-forget trigger.
type engineTrigger struct {
	e   *csync.Engine
	log *slog.Logger
}

func (t engineTrigger) Trigger(ctx context.Context, name, reason string) {
	if _, err := t.e.Trigger(ctx, name, reason); err != nil {
		t.log.Debug("trigger not queued", "catalog", name, "err", err)
	}
}

type enginePoller struct {
	e   *csync.Engine
	log *slog.Logger
}

func (p enginePoller) PollDue(ctx context.Context) {
	if _, err := p.e.PollDue(ctx); err != nil {
		p.log.Warn("poll", "err", err)
	}
}

// webhookCatalogs lists the configured catalogs for the receivers.
type webhookCatalogs struct{ set csync.CatalogSet }

func (w webhookCatalogs) Catalogs() []webhook.Catalog {
	var out []webhook.Catalog
	for _, c := range w.set.Catalogs() {
		out = append(out, webhook.Catalog{Name: c.Name, Image: c.Image})
	}
	return out
}

// gcPolicy maps the flags to GCOptions, whose zero values mean defaults:
// 0 given on the command line means none.
func (f *serveFlags) gcPolicy() catalog.GCOptions {
	o := catalog.GCOptions{Keep: f.gcKeep, Grace: f.gcGrace}
	if o.Keep == 0 {
		o.Keep = -1
	}
	if o.Grace == 0 {
		o.Grace = -1
	}
	return o
}

// runGC deletes, every interval, content that no configured catalog
// needs any more, with the default keep and grace policy.
func runGC(ctx context.Context, log *slog.Logger, store storage.Store, h catalog.LeaseHolder, catalogs func() ([]string, bool), every time.Duration, policy catalog.GCOptions) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !myTurn(ctx, log, store, turnGC, h, every) {
			continue
		}
		// Read the set right before each run, so a catalog created since
		// the last one is not taken for a deleted one.
		names, ok := catalogs()
		if !ok {
			continue
		}
		opts := policy
		opts.Catalogs, opts.Log = names, log
		rep, err := catalog.GC(ctx, store, opts)
		if err != nil {
			log.Warn("gc", "err", err)
			continue
		}
		log.Info("gc done", "deleted", len(rep.Deleted), "freedBytes", rep.DeletedBytes)
	}
}
