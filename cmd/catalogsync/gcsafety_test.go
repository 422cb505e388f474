package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/logbuf"
)

// serveReplica runs serve until the test ends and returns its log.
func serveReplica(t *testing.T, args ...string) *logbuf.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &logbuf.Buffer{}
	done := make(chan int, 1)
	args = append([]string{"serve", "--addr", freeport.Addr(t), "--no-docker-config", "--poll-check-interval", "1h"}, args...)
	go func() { done <- run(ctx, args, &bytes.Buffer{}, logs) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d\n%s", code, logs.String())
		}
	})
	return logs
}

// waitGCPasses waits (bounded) until each log shows n GC passes.
func waitGCPasses(t *testing.T, n int, logs ...*logbuf.Buffer) {
	t.Helper()
	for _, l := range logs {
		for i := 0; strings.Count(l.String(), "gc done") < n; i++ {
			if i > 600 {
				t.Fatalf("fewer than %d GC passes in 60 s:\n%s", n, l.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestServeGCKeepsWhatItDoesNotKnow: serve without a catalog list, with
// an empty one, and two replicas with different lists on one store (a
// rolling update), all with GC every second and no grace: every
// published catalog survives.
func TestServeGCKeepsWhatItDoesNotKnow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real 1 s GC timers in four replicas; storage/catalog's TestGC and TestGCSeesContentAfterMarks cover the rule")
	}
	t.Parallel()
	store := t.TempDir()
	names := []string{"alpha", "beta", "gamma"}
	for _, n := range names {
		if code, _, stderr := runCLI(t, "sync", "--store", store, "--name", n, "--image", sample(t)); code != 0 {
			t.Fatalf("sync %s: %d %s", n, code, stderr)
		}
	}
	gcArgs := []string{"--store", store, "--gc-interval", "1s", "--gc-grace", "0s"}
	listing := func(names ...string) string {
		var b strings.Builder
		b.WriteString("catalogs:")
		if len(names) == 0 {
			b.WriteString(" []")
		}
		for _, n := range names {
			// Polled rarely: the GC rule, not a poll, must keep the others.
			fmt.Fprintf(&b, "\n- name: %s\n  image: %s\n  pollIntervalMinutes: 600", n, sample(t))
		}
		p := filepath.Join(t.TempDir(), "catalogsync.yaml")
		if err := os.WriteFile(p, []byte(b.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The replicas run at once, on the one store, as they would during a
	// rollout; the group ends when all three cases have.
	t.Run("replicas", func(t *testing.T) {
		t.Run("no config", func(t *testing.T) {
			t.Parallel()
			waitGCPasses(t, 3, serveReplica(t, gcArgs...))
		})
		t.Run("empty list", func(t *testing.T) {
			t.Parallel()
			waitGCPasses(t, 3, serveReplica(t, append(gcArgs, "--config", listing())...))
		})
		t.Run("rolling update", func(t *testing.T) {
			t.Parallel()
			old := serveReplica(t, append(gcArgs, "--config", listing("alpha", "beta"))...)
			upd := serveReplica(t, append(gcArgs, "--config", listing("beta", "gamma"))...)
			waitGCPasses(t, 3, old, upd)
		})
	})
	st, err := fs.New(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, n := range names {
		if p, _, err := catalog.Current(context.Background(), st, n); err != nil || p.Digest == "" {
			t.Errorf("%s: deleted (%v)", n, err)
		}
	}
}
