package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/status"
)

// Cluster-wide jobs: replicas sharing a store take turns (a lease in the
// store, catalog.TakeTurn) so that N replicas do one GC pass and one
// due-ness check per interval between them, not N.
const (
	turnGC   = "gc"
	turnPoll = "poll"
)

// dynamicClient is the client for the cluster kubeconfig names (clientcmd's
// loading rules: in-cluster when empty).
func dynamicClient(kubeconfig string) (*dynamic.DynamicClient, error) {
	restCfg, err := kubeclient.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(restCfg)
}

// replicaID names this process in the store's leases: --replica-id (whose
// environment includes POD_NAME), else the host name.
func replicaID(flag string) string {
	host, _ := os.Hostname()
	return cmp.Or(flag, host, "catalogsync")
}

// clusterHolder is this process in cluster-wide leases.
func clusterHolder(replica string) catalog.LeaseHolder {
	return catalog.ThisProcess(replica)
}

// myTurn reports whether this replica does the named job this interval; a
// store that fails to answer means no (the next interval retries).
func myTurn(ctx context.Context, log *slog.Logger, store storage.Store, job string, h catalog.LeaseHolder, every time.Duration) bool {
	ok, holder, err := catalog.TakeTurn(ctx, store, job, h, every)
	switch {
	case err != nil:
		log.Warn("cluster lease", "job", job, "err", err)
	case !ok:
		log.Debug("another replica has this turn", "job", job, "replica", holder.Replica, "until", holder.Expires)
	}
	return ok
}

// poller is what runPoller needs of the engine.
type poller interface {
	PollDue(ctx context.Context) ([]string, error)
}

// runPoller checks which catalogs are due every interval, when it is this
// replica's turn: the fallback for registries that send no webhooks. With
// Knative's PingSource, the ping does the same. At start it checks
// whatever the turn says: "serve syncs each catalog at start" must not
// hang on a turn another replica (whose list may lack this one's new
// catalogs) or this replica's killed predecessor holds. Due-ness is read
// from the store, so replicas starting together sync each catalog once
// between them (the sync lease) and leave published ones alone. A
// graceful stop gives the turn back.
func runPoller(ctx context.Context, log *slog.Logger, e poller, store storage.Store, h catalog.LeaseHolder, every time.Duration) {
	defer releaseTurn(ctx, log, store, turnPoll, h)
	t := time.NewTicker(every)
	defer t.Stop()
	for start := true; ; start = false {
		if myTurn(ctx, log, store, turnPoll, h, every) || start {
			if due, err := e.PollDue(ctx); err != nil {
				log.Warn("poll", "err", err)
			} else if len(due) > 0 {
				log.Debug("polling", "catalogs", due)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// releaseTurn gives job's turn back if this process holds it, once ctx
// (the process's) has ended, so the next replica or this replica's next
// start does the job at once instead of an interval later.
func releaseTurn(ctx context.Context, log *slog.Logger, store storage.Store, job string, h catalog.LeaseHolder) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := catalog.ReleaseTurn(rctx, store, job, h); err != nil {
		log.Warn("cluster lease not released", "job", job, "err", err)
	}
}

// informerSynced is the readiness check of ClusterCatalog mode: no
// ClusterCatalogs listed yet means every trigger would be refused.
func informerSynced(src *status.ClusterCatalogs) func() error {
	return func() error {
		if src != nil && !src.Synced() {
			return errNotListed
		}
		return nil
	}
}

var errNotListed = errors.New("ClusterCatalogs not listed yet")

// readyChecks is the first failing of checks.
func readyChecks(checks ...func() error) func() error {
	return func() error {
		for _, check := range checks {
			if err := check(); err != nil {
				return err
			}
		}
		return nil
	}
}
