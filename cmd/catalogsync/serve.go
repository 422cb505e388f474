package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/api"
	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/graphql"
	"github.com/catalogsync/catalogsync/handlers/ui"
	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/publishevent"
	"github.com/catalogsync/catalogsync/sync/status"
)

// serveCmd keeps catalogs synced and serves them.
type serveCmd struct {
	commonFlags     `embed:""`
	configFlag      `embed:""`
	mirrorSetFlags  `embed:""`
	cli.Serving     `embed:""`
	baseURLFlag     `embed:""`
	MaxSyncs        int           `name:"max-concurrent-syncs" group:"syncs" env:"CATALOGSYNC_MAX_CONCURRENT_SYNCS" default:"4" check:"positive" help:"syncs running at once over all catalogs"`
	RegRate         float64       `name:"registry-rate" group:"syncs" env:"CATALOGSYNC_REGISTRY_RATE" default:"10" check:"positive" help:"syncs started per second against one registry host; more wait queued, never dropped"`
	RegBurst        int           `name:"registry-burst" group:"syncs" env:"CATALOGSYNC_REGISTRY_BURST" default:"10" check:"positive" help:"burst for --registry-rate"`
	PollEvery       time.Duration `name:"poll-check-interval" group:"syncs" env:"CATALOGSYNC_POLL_CHECK_INTERVAL" default:"1m" check:"positive" help:"how often catalogs are checked for a due poll"`
	EventSink       string        `name:"event-sink" group:"syncs" env:"CATALOGSYNC_EVENT_SINK,K_SINK" check:"httpurl" help:"URL that receives a CloudEvent io.catalogsync.catalog.published for each publish (K_SINK as a Knative SinkBinding sets it)"`
	UIOpen          bool          `name:"ui-open" group:"access" env:"CATALOGSYNC_UI_OPEN" help:"with --tls-client-ca-file, serve the UI (/, /ui/) and the catalog list its live refresh reads (GET /api/v1/catalogs) to clients without a certificate"`
	APIOpen         bool          `name:"api-open" group:"access" env:"CATALOGSYNC_API_OPEN" help:"accept POST /api/v1/... without a token when CATALOGSYNC_API_TOKEN is unset: anyone who reaches the API can trigger syncs (logs a warning at start)"`
	EventsAddr      string        `name:"events-addr" group:"http" env:"CATALOGSYNC_EVENTS_ADDR" help:"serve /events on this address only, not on --addr, so event traffic can stay cluster-internal"`
	ClusterCatalogs bool          `name:"clustercatalogs" group:"catalogs" env:"CATALOGSYNC_CLUSTERCATALOGS" help:"sync the cluster's ClusterCatalogs and write their status, instead of the config file's catalogs; needs --base-url"`
	AllowLocal      bool          `name:"allow-local-sources" group:"catalogs" env:"CATALOGSYNC_ALLOW_LOCAL_SOURCES" help:"with --clustercatalogs, accept ocidir:// images, which read this service's own disk"`
	pullSecretFlags `embed:""`
	GCEvery         time.Duration `name:"gc-interval" group:"gc" env:"CATALOGSYNC_GC_INTERVAL" default:"1h" check:"nonneg" help:"how often stored content no longer needed is deleted (0: never)"`
	GCKeep          int           `name:"gc-keep" group:"gc" env:"CATALOGSYNC_GC_KEEP" defaultvar:"keep" check:"nonneg" help:"the periodic GC's --keep"`
	GCGrace         time.Duration `name:"gc-grace" group:"gc" env:"CATALOGSYNC_GC_GRACE" defaultvar:"grace" check:"nonneg" help:"the periodic GC's --grace"`
	GCUnconf        time.Duration `name:"gc-unconfigured-age" group:"gc" env:"CATALOGSYNC_GC_UNCONFIGURED_AGE" defaultvar:"unconfigured" check:"nonneg" help:"a stored catalog this replica does not list is deleted only once no replica touched it this long"`
}

// server holds serve's parts, built before anything runs.
type server struct {
	log      *slog.Logger
	m        *metrics.Metrics
	cfg      Config
	store    storage.Store
	dir      string
	pl       *pipeline.Pipeline
	set      engine.CatalogSet
	gcNames  func() ([]string, bool)
	ccSrc    *status.ClusterCatalogs
	ccWriter *status.Writer
	eng      *engine.Engine
	health   *catalog.Health
	contentH *content.Handler
	r, evr   chi.Router
	tlsR     *tlsreload.Reloader
	http     httpserver.Config
	// closers release what was built, in reverse order.
	closers []func()
}

func (s *server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

func (c *serveCmd) run(ctx context.Context, from origins, stderr io.Writer) error {
	s := &server{log: c.Logger(stderr), m: metrics.New()}
	defer s.close()
	if err := c.build(ctx, from, s); err != nil {
		return err
	}
	return c.serve(ctx, s)
}

// build makes every part of the service; nothing runs yet.
func (c *serveCmd) build(ctx context.Context, from origins, s *server) error {
	if c.Config != "" {
		var err error
		if s.cfg, err = c.load(); err != nil {
			return err
		}
	}
	if err := c.openStore(ctx, from, s); err != nil {
		return err
	}
	if err := c.buildPipeline(ctx, s); err != nil {
		return err
	}
	observers, err := c.buildCatalogSet(ctx, s)
	if err != nil {
		return err
	}
	// A store that refuses writes fails every sync at once, naming the
	// store; its fix starts them again.
	s.health = catalog.NewHealth(s.store, s.dir, catalog.ThisProcess(replicaID(c.Replica)), s.log, func() {
		s.eng.RetryFailed(ctx, "store writable")
	})
	s.eng = engine.New(s.pl, s.set, s.store,
		engine.WithMaxConcurrent(c.MaxSyncs), engine.WithRegistryRate(c.RegRate, c.RegBurst),
		engine.WithLogger(s.log), engine.WithObservers(observers...), engine.WithStoreCheck(s.health.Denied))
	return c.buildHTTP(s)
}

// openStore opens the store, timed by the metrics, and refuses one that
// cannot be read: better now than at the first sync. One Stat of a key
// that never exists (as /readyz), not a List of every stored object: a
// process started for a request waits for this.
func (c *serveCmd) openStore(ctx context.Context, from origins, s *server) error {
	store, dir, err := openFrom(ctx, c.Storage, from, c.TmpDir, c.S3Concurrency)
	if err != nil {
		return err
	}
	// The wrapper keeps Close and the GC's leftover cleaning.
	s.store, s.dir = s.m.Store(store), dir
	s.closers = append(s.closers, func() { storage.Close(s.store) })
	if _, err := s.store.Stat(ctx, "catalogs/.ready"); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("store %s is not usable: %w", dir, err)
	}
	return nil
}

// buildPipeline makes the pipeline, which tells the content handler (made
// later) of its own publishes.
func (c *serveCmd) buildPipeline(ctx context.Context, s *server) error {
	c.noLocal = c.ClusterCatalogs && !c.AllowLocal
	var err error
	if c.creds, err = startPullSecret(ctx, c.PullSecret, c.Kubeconfig, s.log); err != nil {
		return err
	}
	if c.ClusterCatalogs && !c.NoMirrorSets {
		if c.mirrors, err = c.startMirrorSets(ctx, s.log); err != nil {
			return err
		}
	}
	c.sigs = s.cfg.signatures()
	pl, src, err := c.pipeline(s.log, s.store, s.cfg.Registries, pipeline.WithOnPublish(func(name string) {
		if s.contentH != nil {
			s.contentH.Invalidate(name)
		}
	}))
	if err != nil {
		return err
	}
	s.pl = pl
	s.closers = append(s.closers, func() { src.Close() })
	return nil
}

// buildCatalogSet picks the catalogs (the file's, or the cluster's
// ClusterCatalogs) and returns the sync observers: metrics, the event
// sink, the ClusterCatalog status writer.
func (c *serveCmd) buildCatalogSet(ctx context.Context, s *server) ([]pipeline.Observer, error) {
	s.set = engine.StaticCatalogs(s.cfg.catalogs())
	cfgNames := make([]string, 0, len(s.cfg.Catalogs))
	for _, cc := range s.cfg.Catalogs {
		cfgNames = append(cfgNames, cc.Name)
	}
	s.gcNames = func() ([]string, bool) { return cfgNames, true }
	observers := []pipeline.Observer{pipeline.MetricsObserver(s.m)}
	if c.EventSink != "" {
		em, err := publishevent.New(c.EventSink, publishevent.WithBaseURL(c.BaseURL), publishevent.WithLogger(s.log))
		if err != nil {
			return nil, usageError{Msg: err.Error()}
		}
		s.closers = append(s.closers, func() {
			// Give queued events a moment to leave; never hold shutdown long.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			em.Close(cctx)
		})
		observers = append(observers, em)
	}
	if !c.ClusterCatalogs {
		return observers, nil
	}
	if err := c.buildClusterCatalogs(ctx, s); err != nil {
		return nil, err
	}
	return append(observers, s.ccWriter), nil
}

// buildClusterCatalogs follows the cluster's ClusterCatalogs as the
// catalog set and writes their status.
func (c *serveCmd) buildClusterCatalogs(ctx context.Context, s *server) error {
	dyn, err := dynamicClient(c.Kubeconfig)
	if err != nil {
		return err
	}
	s.ccSrc = status.NewClusterCatalogs(dyn, status.WithClusterCatalogsLogger(s.log), status.WithOnChange(func(name string) {
		// Created, spec changed or deleted: sync now; the engine
		// refuses names no longer in the set (deleted, Unavailable).
		if _, err := s.eng.Trigger(ctx, name, "clustercatalog"); err != nil {
			s.log.Debug("clustercatalog change not synced", "catalog", name, "err", err)
		}
	}))
	if s.ccWriter, err = status.NewWriter(dyn, s.ccSrc, s.store, c.BaseURL, status.WithWriterLogger(s.log),
		status.WithWriterReplica(replicaID(c.Replica)), status.WithLeftAlone(s.m.LeftAlone())); err != nil {
		return fmt.Errorf("--clustercatalogs needs --base-url: %w", err)
	}
	s.set, s.gcNames = s.ccSrc, s.ccSrc.Names
	return nil
}

// buildHTTP makes the routers: the REST API, content, UI and triggers.
func (c *serveCmd) buildHTTP(s *server) error {
	var err error
	if s.http, err = c.HTTP(openWithoutCert(c.UIOpen)); err != nil {
		return err
	}
	s.r = s.http.Router(s.m, s.log)
	if s.tlsR, err = s.http.Reloader(s.log); err != nil {
		return usageError{Msg: err.Error()}
	}
	c.mountAPI(s)
	mountContent(s, c.graphqlBudget())
	// The catalog browser at /ui/, and / linking to it.
	ui.New(s.store, s.set, ui.WithLogger(s.log)).Mount(s.r)
	s.evr = s.r
	if c.EventsAddr != "" {
		s.evr = s.http.Router(s.m, s.log)
	}
	return mountTriggers(s.r, s.evr, s.cfg, s.eng, s.set, s.m, s.log, c.Kubeconfig)
}

// mountAPI mounts /api/v1/..., /openapi.yaml, /healthz, /readyz, /metrics.
func (c *serveCmd) mountAPI(s *server) {
	// Read from the environment only: flags show in ps.
	apiToken := envValue(envAPIToken)
	if apiToken == "" && c.APIOpen {
		s.log.Warn("the REST API accepts POST without a token (--api-open): anyone who reaches it can trigger syncs")
	}
	api.New(s.eng, s.set, s.store,
		api.WithLogger(s.log), api.WithToken(apiToken), api.WithOpen(c.APIOpen), api.WithBaseURL(c.BaseURL),
		api.WithMetrics(s.m.Handler()), api.WithReadyCheck(readyChecks(informerSynced(s.ccSrc), s.health.Ready)),
	).Mount(s.r)
}

// graphqlBudget is the GraphQL answer budget of the settings (checked
// at load).
func (c *serveCmd) graphqlBudget() graphql.Option {
	return graphql.WithAnswerBudget(c.GraphQLBudget())
}

// mountContent mounts /catalogs/{name}/api/v1/{all,metas,graphql}.
func mountContent(s *server, budget graphql.Option) {
	// Only catalogs of the set are looked up in the store: a flood of
	// random names costs no store operation.
	opts := []content.Option{content.WithLogger(s.log), content.WithAvailability(configured(s.set))}
	if s.ccSrc != nil {
		// availabilityMode: Unavailable -> 404, as catalogd.
		opts = append(opts, content.WithAvailability(s.ccSrc.Available))
	}
	// GraphQL reads catalogs through the content handler's cache.
	opts = append(opts, content.WithGraphQL(graphql.New(graphql.OpenerFunc(func(ctx context.Context, name string) (*catalog.Catalog, error) {
		return s.contentH.Catalog(ctx, name)
	}), graphql.WithLogger(s.log), budget)))
	s.contentH = content.New(s.store, opts...)
	s.contentH.Mount(s.r)
}

// serve listens, starts the background work and serves until ctx ends,
// then stops gracefully.
func (c *serveCmd) serve(ctx context.Context, s *server) error {
	if s.tlsR != nil {
		go s.tlsR.Run(ctx)
	}
	if c.EventsAddr != "" {
		stopEvents, err := serveEvents(s.http, c.EventsAddr, s.evr, s.tlsR, s.log)
		if err != nil {
			return err
		}
		defer stopEvents()
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srv, ln := s.http.Server(s.r, ln)
	s.log.Info("serving", "addr", ln.Addr().String(), "store", s.dir, "catalogs", len(s.cfg.Catalogs))
	c.logSurfaces(ctx, s, envValue(envAPIToken))
	bgDone, err := c.start(ctx, s)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- httpserver.Serve(srv, ln, s.tlsR) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	s.log.Info("stopping; a second signal exits at once", "grace", c.ShutdownGrace)
	err = httpserver.Shutdown(srv, c.ShutdownGrace, s.log)
	// The poller and GC give back their turns, the syncs their leases
	// (cancelled with ctx), before the store closes.
	<-bgDone
	s.eng.Wait()
	s.log.Info("stopped")
	return err
}

// start runs the engine, the ClusterCatalog informers, the poller and the
// GC; the channel closes when the poller and the GC stopped.
func (c *serveCmd) start(ctx context.Context, s *server) (<-chan struct{}, error) {
	s.eng.Start(ctx)
	// After the engine: OnChange may trigger it from the first event.
	if s.ccSrc != nil {
		// Both Run only return ctx.Err() once ctx ends (the writer also
		// ErrRunning on a second start, and this is the only one).
		go func() { _ = s.ccSrc.Run(ctx) }()
		go func() { _ = s.ccWriter.Run(ctx) }()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.ccSrc.WaitForSync(wctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("clustercatalogs: %w", err)
		}
	}
	bgDone := make(chan struct{})
	go func() {
		// Off the way to the first answer (a store probe writes; it took
		// 4-9 ms of a 15 ms start), but before the start's polls: the
		// store's health decides whether they can succeed. Then the probe
		// runs on, for /readyz.
		_ = s.health.Check(ctx) // kept for /readyz and the engine; logged
		// Polls and GC are cluster-wide: replicas sharing the store take turns.
		holder := clusterHolder(replicaID(c.Replica))
		var wg sync.WaitGroup
		wg.Go(func() { s.health.Run(ctx) })
		wg.Go(func() { runPoller(ctx, s.log, s.eng, s.store, holder, c.PollEvery) })
		wg.Go(func() { runGC(ctx, s.log, s.store, holder, s.gcNames, c.GCEvery, c.gcPolicy()) })
		wg.Wait()
		close(bgDone)
	}()
	return bgDone, nil
}

// mountTriggers adds the webhook receivers (/hooks/...) to r and, when
// configured, the CloudEvents endpoint (/events) to evr. Both only name
// what may have changed: the engine resolves configured catalogs' own
// references.
func mountTriggers(r, evr chi.Router, cfg Config, eng *engine.Engine, set engine.CatalogSet, m *metrics.Metrics, log *slog.Logger, kubeconfig string) error {
	trig := engineTrigger{eng, log}
	lister := set
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

// gcPolicy maps the flags to GCOptions, whose zero values mean defaults:
// 0 given on the command line means none.
func (c *serveCmd) gcPolicy() catalog.GCOptions {
	o := catalog.GCOptions{Keep: c.GCKeep, Grace: c.GCGrace, UnconfiguredAge: c.GCUnconf}
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
	defer releaseTurn(ctx, log, store, turnGC, h)
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
