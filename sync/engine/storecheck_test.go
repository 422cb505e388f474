package engine_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// While the store check fails, a sync fails at once with its error, is
// not retried and never reaches the runner; RetryFailed starts it again
// once the check passes.
func TestUnitStoreCheckFailsSyncsUntilRetried(t *testing.T) {
	t.Parallel()
	r := newFakeRunner()
	var denied atomic.Bool
	denied.Store(true)
	check := func() error {
		if denied.Load() {
			return errors.New("store /srv/store refuses this process's writes")
		}
		return nil
	}
	eng, ctx := startEngine(t, r, engine.StaticCatalogs{{Name: "c", Image: catalogspec.ParseImage("reg.test/c:v1")}, {Name: "ok", Image: catalogspec.ParseImage("reg.test/ok:v1")}},
		engine.WithStoreCheck(check))
	eng.Trigger(ctx, "c", "test")
	waitFor(t, "the sync to fail", time.Minute, idle(eng, "c"))
	st, _ := eng.State("c")
	if st.Last.State != engine.OpFailed || st.Last.Error.Reason != pipeline.ReasonStorage || st.Last.Error.Retryable ||
		!strings.Contains(st.Last.Error.Error(), "/srv/store") || !st.NextRetry.IsZero() || st.Failures != 1 {
		t.Fatalf("with the store refusing writes: %+v %+v, next retry %v", st.Last, st.Last.Error, st.NextRetry)
	}
	if r.read(func(f *fakeRunner) bool { return f.runs["c"] != 0 }) {
		t.Fatal("the runner ran a sync the store check refused")
	}
	denied.Store(false)
	if got := eng.RetryFailed(ctx, "store writable"); len(got) != 1 || got[0] != "c" {
		t.Fatalf("RetryFailed triggered %v, want only the failed catalog", got)
	}
	waitFor(t, "the retried sync to succeed", time.Minute, func() bool {
		st, _ := eng.State("c")
		return st.Last != nil && st.Last.State == engine.OpSucceeded
	})
	if got := eng.RetryFailed(ctx, "store writable"); len(got) != 0 {
		t.Fatalf("RetryFailed with nothing failed triggered %v", got)
	}
}
