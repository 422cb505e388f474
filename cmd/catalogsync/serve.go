package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/graphql"
	"github.com/catalogsync/catalogsync/handlers/ui"
	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
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
	gcUnconf  time.Duration
	// shutdownGrace is how long requests in flight may run on at a stop.
	shutdownGrace time.Duration
	readLimit     time.Duration

	apiOpen    bool
	eventsAddr string
	writeStall time.Duration

	clusterCatalogs bool
	allowLocal      bool
	kubeconfig      string
	eventSink       string
	pullSecret      string

	tls tlsreload.Files
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
	fset.BoolVar(&f.allowLocal, "allow-local-sources", os.Getenv("CATALOGSYNC_ALLOW_LOCAL_SOURCES") == "true", "with --clustercatalogs, accept ocidir:// images, which read this service's own disk; off, a cluster user cannot make it read local files (env CATALOGSYNC_ALLOW_LOCAL_SOURCES=true)")
	fset.StringVar(&f.kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig for --clustercatalogs; the in-cluster service account when empty (env KUBECONFIG)")
	fset.StringVar(&f.pullSecret, "pull-secret", envOr("CATALOGSYNC_PULL_SECRET", ""), "namespace/name of a kubernetes.io/dockerconfigjson Secret whose registry credentials are used over the docker config's, followed as it changes (env CATALOGSYNC_PULL_SECRET)")
	fset.StringVar(&f.eventSink, "event-sink", "", "URL that receives a CloudEvent io.catalogsync.catalog.published for each publish (env CATALOGSYNC_EVENT_SINK, else K_SINK as a Knative SinkBinding sets it)")
	fset.DurationVar(&f.gcEvery, "gc-interval", envDuration("CATALOGSYNC_GC_INTERVAL", time.Hour), "how often stored content no longer needed is deleted; 0 disables (env CATALOGSYNC_GC_INTERVAL)")
	fset.DurationVar(&f.shutdownGrace, "shutdown-grace", envDuration("CATALOGSYNC_SHUTDOWN_GRACE", 10*time.Second), "how long requests in flight may run on after SIGTERM before their connections are closed; a second signal exits at once (env CATALOGSYNC_SHUTDOWN_GRACE)")
	fset.DurationVar(&f.readLimit, "read-timeout", envDuration("CATALOGSYNC_READ_TIMEOUT", 30*time.Second), "longest time to read a request, body included (env CATALOGSYNC_READ_TIMEOUT)")
	fset.BoolVar(&f.apiOpen, "api-open", os.Getenv("CATALOGSYNC_API_OPEN") == "true", "accept POST /api/v1/... without a token when CATALOGSYNC_API_TOKEN is unset: anyone who reaches the API can trigger syncs (env CATALOGSYNC_API_OPEN=true)")
	fset.StringVar(&f.eventsAddr, "events-addr", envOr("CATALOGSYNC_EVENTS_ADDR", ""), "serve /events on this address only, not on --addr, so event traffic can stay cluster-internal (env CATALOGSYNC_EVENTS_ADDR)")
	fset.DurationVar(&f.writeStall, "write-stall-timeout", envDuration("CATALOGSYNC_WRITE_STALL_TIMEOUT", time.Minute), "a response that makes no progress this long (a client that stopped reading) is abandoned; 0 never (env CATALOGSYNC_WRITE_STALL_TIMEOUT)")
	fset.IntVar(&f.gcKeep, "gc-keep", envInt("CATALOGSYNC_GC_KEEP", catalog.DefaultKeep), "non-current digests GC keeps per catalog besides the current one (env CATALOGSYNC_GC_KEEP)")
	fset.DurationVar(&f.gcUnconf, "gc-unconfigured-age", envDuration("CATALOGSYNC_GC_UNCONFIGURED_AGE", catalog.DefaultUnconfiguredAge), "how long a stored catalog that is not configured here must be untouched by every replica before GC deletes it (env CATALOGSYNC_GC_UNCONFIGURED_AGE)")
	fset.StringVar(&f.tls.Cert, "tls-cert-file", envOr("CATALOGSYNC_TLS_CERT_FILE", ""), "serve HTTPS with this PEM certificate, reloaded when the file changes (env CATALOGSYNC_TLS_CERT_FILE)")
	fset.StringVar(&f.tls.Key, "tls-key-file", envOr("CATALOGSYNC_TLS_KEY_FILE", ""), "PEM key of --tls-cert-file (env CATALOGSYNC_TLS_KEY_FILE)")
	fset.StringVar(&f.tls.ClientCA, "tls-client-ca-file", envOr("CATALOGSYNC_TLS_CLIENT_CA_FILE", ""), "require client certificates signed by this CA on the REST API /api/ (mutual TLS; env CATALOGSYNC_TLS_CLIENT_CA_FILE)")
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
	cf.noLocal = sf.clusterCatalogs && !sf.allowLocal
	if cf.creds, err = startPullSecret(ctx, sf.pullSecret, sf.kubeconfig, log); err != nil {
		return err
	}
	cf.sigRules = cfg.SignaturePolicy
	pl, src, err := cf.pipeline(log, store, cfg.Registries, pipeline.WithOnPublish(func(name string) {
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
	var set engine.CatalogSet = engine.StaticCatalogs(cfg.catalogs())
	observers := []pipeline.Observer{m.SyncObserver()}
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
		eng      *engine.Engine
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
			if _, err := eng.Trigger(ctx, name, "clustercatalog"); err != nil {
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
	eng = engine.New(pl, set, store,
		engine.WithMaxConcurrent(sf.maxSyncs), engine.WithRegistryRate(sf.regRate, sf.regBurst),
		engine.WithLogger(log), engine.WithObservers(observers...))

	r := sf.router(m, log)
	tlsR, err := sf.tlsReloader(log)
	if err != nil {
		return usageError{err.Error()}
	}
	if sf.tls.ClientCA != "" {
		r.Use(tlsreload.RequireClientCert("/api/"))
	}
	// Read from the environment only: flags show in ps.
	apiToken := os.Getenv("CATALOGSYNC_API_TOKEN")
	if apiToken == "" && sf.apiOpen {
		log.Warn("the REST API accepts POST without a token (--api-open): anyone who reaches it can trigger syncs")
	}
	api.New(eng, set, store,
		api.WithLogger(log), api.WithToken(apiToken), api.WithOpen(sf.apiOpen), api.WithBaseURL(sf.baseURL),
		api.WithMetrics(m.Handler()), api.WithReadyCheck(informerSynced(ccSrc)),
	).Mount(r) // /api/v1/..., /openapi.yaml, /healthz, /readyz, /metrics
	// Only catalogs of the set are looked up in the store: a flood of
	// random names costs no store operation.
	contentOpts := []content.Option{content.WithLogger(log), content.WithAvailability(configured(set))}
	if ccSrc != nil {
		// availabilityMode: Unavailable -> 404, as catalogd.
		contentOpts = append(contentOpts, content.WithAvailability(ccSrc.Available))
	}
	// GraphQL reads catalogs through the content handler's cache.
	contentOpts = append(contentOpts, content.WithGraphQL(graphql.New(graphql.OpenerFunc(func(ctx context.Context, name string) (*catalog.Catalog, error) {
		return contentH.Catalog(ctx, name)
	}), graphql.WithLogger(log))))
	contentH = content.New(store, contentOpts...)
	contentH.Mount(r) // /catalogs/{name}/api/v1/{all,metas,graphql}
	// The catalog browser at /ui/, and / linking to it.
	ui.New(store, set, ui.WithLogger(log)).Mount(r)
	evr := r
	if sf.eventsAddr != "" {
		evr = sf.router(m, log)
	}
	if err := mountTriggers(r, evr, cfg, eng, set, m, log, sf.kubeconfig); err != nil {
		return err
	}
	if sf.eventsAddr != "" {
		stopEvents, err := serveEvents(sf.eventsAddr, evr, sf.readLimit, log)
		if err != nil {
			return err
		}
		defer stopEvents()
	}

	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		return err
	}
	srv := newServer(r, sf.readLimit)
	log.Info("serving", "addr", ln.Addr().String(), "store", dir, "catalogs", len(cfg.Catalogs))

	eng.Start(ctx)
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
		runPoller(ctx, log, eng, store, holder, sf.pollEvery)
	}()
	go runGC(ctx, log, store, holder, gcNames, sf.gcEvery, sf.gcPolicy())
	errc := make(chan error, 1)
	go func() { errc <- serveListener(ctx, srv, ln, tlsR) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	log.Info("stopping; a second signal exits at once", "grace", sf.shutdownGrace)
	err = shutdown(srv, sf.shutdownGrace, log)
	<-pollDone
	eng.Wait()
	log.Info("stopped")
	return err
}

// mountTriggers adds the webhook receivers (/hooks/...) to r and, when
// configured, the CloudEvents endpoint (/events) to evr. Both only name
// what may have changed: the engine resolves configured catalogs' own
// references.
func mountTriggers(r, evr chi.Router, cfg Config, eng *engine.Engine, set engine.CatalogSet, m *metrics.Metrics, log *slog.Logger, kubeconfig string) error {
	trig := engineTrigger{eng, log}
	lister := webhookCatalogs{set}
	if len(cfg.Webhooks.Receivers) > 0 {
		rc, err := webhook.NewReceiver(cfg.Webhooks, lister, trig, webhook.WithLogger(log), webhook.WithOutcome(m.Webhook))
		if err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		secretRouted := false
		for _, ep := range rc.Endpoints() {
			if ep.Secret {
				if secretRouted {
					continue
				}
				secretRouted = true
				// One pattern for every secret path: chi's pattern is the
				// route metrics and logs show.
				r.Handle(webhook.SecretRoute, rc)
				continue
			}
			r.Handle(ep.Path, rc)
		}
	}
	if cfg.Events != nil {
		opts, err := eventsOptions(*cfg.Events, kubeconfig, m, log)
		if err != nil {
			return err
		}
		h, err := events.New(*cfg.Events, lister, trig, enginePoller{eng, log}, opts...)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		evr.Handle("/events", h)
	}
	return nil
}

// engineTrigger adapts the engine to the receivers' fire-and-forget trigger.
type engineTrigger struct {
	e   *engine.Engine
	log *slog.Logger
}

func (t engineTrigger) Trigger(ctx context.Context, name, reason string) {
	if _, err := t.e.Trigger(ctx, name, reason); err != nil {
		t.log.Debug("trigger not queued", "catalog", name, "err", err)
	}
}

type enginePoller struct {
	e   *engine.Engine
	log *slog.Logger
}

func (p enginePoller) PollDue(ctx context.Context) {
	if _, err := p.e.PollDue(ctx); err != nil {
		p.log.Warn("poll", "err", err)
	}
}

// webhookCatalogs lists the configured catalogs for the receivers.
type webhookCatalogs struct{ set engine.CatalogSet }

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
	o := catalog.GCOptions{Keep: f.gcKeep, Grace: f.gcGrace, UnconfiguredAge: f.gcUnconf}
	if o.Keep == 0 {
		o.Keep = -1
	}
	if o.Grace == 0 {
		o.Grace = -1
	}
	if o.UnconfiguredAge == 0 {
		o.UnconfiguredAge = -1
	}
	return o
}

// runGC deletes, every interval, content that no configured catalog
// needs any more, with the default keep and grace policy, on the turn of
// one replica among those sharing the store. Before each run,
// and even with GC disabled here (every <= 0), it marks the catalogs this
// replica configures, so GC run by a replica with another list keeps them.
func runGC(ctx context.Context, log *slog.Logger, store storage.Store, h catalog.LeaseHolder, catalogs func() ([]string, bool), every time.Duration, policy catalog.GCOptions) {
	age := policy.UnconfiguredAge
	if age <= 0 {
		age = catalog.DefaultUnconfiguredAge
	}
	fresh := max(age/4, time.Second)
	tick := every
	if tick <= 0 || tick > fresh {
		tick = fresh
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	lastGC := time.Now() // the first GC runs an interval after start
	for {
		// Read the set right before each run, so a catalog created since
		// the last one is not taken for a deleted one.
		if names, ok := catalogs(); ok {
			if err := catalog.MarkConfigured(ctx, store, names, fresh); err != nil {
				log.Warn("gc: marking configured catalogs", "err", err)
			}
			if every > 0 && time.Since(lastGC) >= every {
				lastGC = time.Now()
				if myTurn(ctx, log, store, turnGC, h, every) {
					runGCOnce(ctx, log, store, names, policy)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func runGCOnce(ctx context.Context, log *slog.Logger, store storage.Store, names []string, policy catalog.GCOptions) {
	opts := policy
	opts.Catalogs, opts.Log = names, log
	rep, err := catalog.GC(ctx, store, opts)
	if err != nil {
		log.Warn("gc", "err", err)
		return
	}
	log.Info("gc done", "deleted", len(rep.Deleted), "freedBytes", rep.DeletedBytes)
}
