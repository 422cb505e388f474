package s3

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/test/servers"
)

// A request to a store that stopped answering is sent twice, not as often
// as the SDK retries other failures, and fails with ErrStalled: a sync or
// a reader learns of a hung store after two stall timeouts.
func TestStalledRequestTriedTwice(t *testing.T) {
	m := servers.SharedMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, newBucket(t, m))
	cfg.Endpoint, cfg.StallTimeout = proxy.URL, 300*time.Millisecond
	s := newTestStore(t, cfg)
	proxy.ResetCounts() // New's checks
	proxy.Inject(servers.StallAfter(-1), 0, classPut)
	_, err := s.PutIf(testCtx(t), "hung", []byte("x"), "")
	if !errors.Is(err, stall.ErrStalled) {
		t.Fatalf("PutIf on a hung store: %v, want ErrStalled", err)
	}
	if got := proxy.Count(classPut); got != 2 {
		t.Fatalf("%d PutObject requests, want 2", got)
	}
	// Other failures keep the SDK's tries.
	proxy.Clear()
	proxy.ResetCounts()
	proxy.Inject(servers.Status(500), 0, classPut)
	if _, err := s.Put(testCtx(t), "failing", bytes.NewReader([]byte("x"))); err == nil {
		t.Fatal("Put through a failing store succeeded")
	}
	if got := proxy.Count(classPut); got != 3 {
		t.Fatalf("%d PutObject requests after errors, want 3", got)
	}
}
