package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csync "github.com/catalogsync/catalogsync/sync"
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

	var engine *csync.Engine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := NewSource(c.dyn, WithOnChange(func(name string) { _, _ = engine.Trigger(ctx, name, "clustercatalog") }))
	w, err := NewWriter(c.dyn, src, r.store, testBaseURL, WithWriterLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	engine = csync.NewEngine(r.pl, src, r.store, csync.WithMaxConcurrent(1), csync.WithObservers(w), csync.WithSettle(0, 0))
	engine.Start(ctx)
	done := make(chan struct{}, 2)
	go func() { src.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; engine.Wait() }()
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	rec := record(t, c, "waiting")
	c.create(t, "slow", slowRef)
	if err := eventually(20*time.Second, func() error {
		if st, _ := engine.State("slow"); st.Running == nil || st.Running.State != csync.OpRunning {
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
	if st, _ := engine.State("slow"); st.Last != nil {
		t.Fatal("the slow sync ended before the wait was seen: nothing proven")
	}
	rec.wait(60*time.Second, "Published and Serving", func(v seen) bool {
		return isCond(v, TypeServing, metav1.ConditionTrue, ReasonAvailable) &&
			strings.HasPrefix(v.cond(TypeProgressing).Message, "Published "+digest)
	})
}
