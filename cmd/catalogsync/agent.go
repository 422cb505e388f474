package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/metrics"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/sync/follow"
	"github.com/catalogsync/catalogsync/sync/status"
)

// agentCmd writes a member cluster's ClusterCatalog status from the
// pointers another deployment publishes to the store. It pulls no image
// and writes nothing to the store.
type agentCmd struct {
	cli.Logging    `embed:""`
	cli.Storage    `embed:"" group:"store"`
	kubeconfigFlag `embed:""`
	baseURLFlag    `embed:""`
	cli.Address    `embed:""`
	PointerPoll    time.Duration `name:"pointer-poll-interval" group:"catalogs" env:"CATALOGSYNC_POINTER_POLL_INTERVAL" defaultvar:"pointerPoll" check:"positive" help:"agent: how often every ClusterCatalog's published pointer is checked for a change (one HEAD each), the fallback for lost or absent bucket notifications"`
	NotifyOpen     bool          `name:"notify-open" group:"access" env:"CATALOGSYNC_NOTIFY_OPEN" help:"agent: accept bucket notifications on /events without CATALOGSYNC_NOTIFY_TOKEN: anyone who reaches it can make pointers be read again (never more)"`
}

// Help is the agent's description in its help.
func (c *agentCmd) Help() string {
	return "Follows the store's published pointers (bucket notifications on /events, and a poll) and writes each " +
		"ClusterCatalog's Serving, resolvedSource, urls and lastUnpacked as catalogd would; Progressing says whether " +
		"the store has the spec's image. Read-only store credentials suffice. --base-url is where clients read " +
		"catalogs: the bucket's URL or a CDN's."
}

// agentStopGrace bounds the wait for requests in flight at a stop: the
// agent's answer no more than a notification.
const agentStopGrace = 5 * time.Second

func (c *agentCmd) run(ctx context.Context, from origins, stderr io.Writer) error {
	if err := c.baseURLFlag.check("agent", "where clients read catalogs (the bucket's URL, e.g. https://s3.example.com/bucket, or a CDN's)"); err != nil {
		return err
	}
	token := envValue(envNotifyToken)
	log := c.Logger(stderr)
	store, where, err := c.OpenReadOnly(ctx, from)
	if err != nil {
		return err
	}
	defer storage.Close(store)
	if _, err := store.Stat(ctx, "catalogs/.ready"); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("store %s is not readable: %w", where, err)
	}
	dyn, err := dynamicClient(c.Kubeconfig)
	if err != nil {
		return err
	}
	src := status.NewClusterCatalogs(dyn, status.WithClusterCatalogsLogger(log))
	w, err := status.NewWriter(dyn, src, store, c.BaseURL, status.WithFollowOnly(),
		status.WithWriterLogger(log), status.WithWriterReplica(replicaID("")))
	if err != nil {
		return usageError{Msg: err.Error()}
	}
	f := follow.New(store, src, w, follow.WithBucket(c.S3.Bucket, c.S3.Prefix),
		follow.WithPollInterval(c.PointerPoll), follow.WithLogger(log))
	m := metrics.New()
	h, err := c.handler(src, f, m, log, token)
	if err != nil {
		return err
	}
	return c.serve(ctx, log, where, h, src, w, f)
}

// handler is the agent's HTTP side: probes, metrics and, with a token or
// --notify-open, bucket notifications on /events.
func (c *agentCmd) handler(src *status.ClusterCatalogs, f *follow.Follower, m *metrics.Metrics, log *slog.Logger, token string) (http.Handler, error) {
	sf := agentHTTP()
	r := sf.Router(m, log)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !src.Synced() {
			http.Error(w, "ClusterCatalogs not listed yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	r.Handle("/metrics", m.Handler())
	if token == "" && !c.NotifyOpen {
		log.Info("bucket notifications are refused: set " + envNotifyToken + " (or --notify-open) to accept them on /events; pointers are polled")
		return r, nil
	}
	if token == "" {
		log.Warn("bucket notifications are accepted without a token (--notify-open): anyone who reaches /events can make pointers be read again")
	}
	n, err := events.NewNotifications(events.NotifyConfig{Token: token, Insecure: token == ""}, f,
		events.WithLogger(log), events.WithOutcome(m.Webhook))
	if err != nil {
		return nil, usageError{Msg: err.Error()}
	}
	r.Handle("/events", n)
	return r, nil
}

// agentHTTP is how the agent holds connections: serve's defaults (its
// requests are probes and small notifications).
func agentHTTP() httpserver.Config {
	return httpserver.Config{MaxConns: 64, IdleTimeout: 75 * time.Second, HeaderTimeout: 10 * time.Second,
		WriteStall: time.Minute, ReadTimeout: 30 * time.Second}
}

// serve runs the informer, the writer and the follower, and answers HTTP,
// until ctx ends; then it stops them and waits.
func (c *agentCmd) serve(ctx context.Context, log *slog.Logger, where string, h http.Handler, src *status.ClusterCatalogs, w *status.Writer, f *follow.Follower) error {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	sf := agentHTTP()
	srv, ln := sf.Server(h, ln)
	log.Info("agent serving", "addr", ln.Addr().String(), "store", where, "baseURL", c.BaseURL, "pointerPoll", c.PointerPoll)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: an early return stops them too
	// Each returns ctx's error once ctx ends, and nothing else.
	wg.Go(func() { _ = src.Run(ctx) })
	wg.Go(func() { _ = w.Run(ctx) })
	wg.Go(func() {
		if src.WaitForSync(ctx) == nil {
			_ = f.Run(ctx)
		}
	})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	log.Info("stopping")
	err = httpserver.Shutdown(srv, agentStopGrace, log)
	cancel()
	wg.Wait()
	log.Info("stopped", "notified", f.Stats().Notified, "polledChanges", f.Stats().Polled)
	return err
}
