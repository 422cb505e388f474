package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/test/servers"
)

// A sync that waits for one of the engine's slots says so on its status
// while it waits, then runs and publishes.
func TestWaitingForSlotIsShown(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	img := catalogImage(t, "community-v4.21-3pkgs")
	slowRef, _ := r.push("slot/slow:v1", img)
	ref, digest := r.push("slot/waiting:v1", catalogImage(t, "tiny"))
	// The first catalog's layer takes about 4 s, holding the only slot.
	// (The config blob first, untouched.)
	r.proxy.Inject(func(w http.ResponseWriter, r *http.Request, next http.Handler) { next.ServeHTTP(w, r) }, 1, servers.BlobGET)
	r.proxy.Inject(servers.Throttle(max(layerSize(t, img)/4, 1)), 1, servers.BlobGET)
	defer r.proxy.Clear()

	var eng *engine.Engine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := NewClusterCatalogs(c.dyn, WithOnChange(func(name string) { _, _ = eng.Trigger(ctx, name, "clustercatalog") }))
	w, err := NewWriter(c.dyn, src, r.store, testBaseURL, WithWriterLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	eng = engine.New(r.pl, src, r.store, engine.WithMaxConcurrent(1), engine.WithObservers(w), engine.WithSettle(0, 0))
	eng.Start(ctx)
	done := make(chan struct{}, 2)
	go func() { src.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; eng.Wait() }()
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	rec := record(t, c, "waiting")
	c.create(t, "slow", slowRef)
	if err := eventually(20*time.Second, func() error {
		if st, _ := eng.State("slow"); st.Running == nil || st.Running.State != engine.OpRunning {
			return context.DeadlineExceeded
		}
		return nil
	}); err != nil {
		t.Fatal("the slow sync never ran")
	}
	c.create(t, "waiting", ref)
	v, _ := rec.wait(20*time.Second, "Waiting for a free sync slot", func(v seen) bool {
		return strings.HasPrefix(v.cond(TypeProgressing).Message, "Waiting for a free sync slot")
	})
	t.Logf("while the slot is taken: %q", v.cond(TypeProgressing).Message)
	if st, _ := eng.State("slow"); st.Last != nil {
		t.Fatal("the slow sync ended before the wait was seen: nothing proven")
	}
	rec.wait(60*time.Second, "Published and Serving", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) &&
			strings.HasPrefix(v.cond(TypeProgressing).Message, "Published "+digest)
	})
}
