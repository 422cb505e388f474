package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/test/servers"
)

// restartStack is one serve process (the real binary) on a store directory
// the test reads too, with a config file it rewrites between runs.
type restartStack struct {
	t     *testing.T
	cfg   string
	store *fs.Store
	cs    *servers.Catalogsync
}

// startRestartStack serves the sample catalog under names, polling every
// hour: within a test, only a start explains a sync nobody asked for.
func startRestartStack(t *testing.T, names ...string) *restartStack {
	t.Helper()
	servers.CatalogsyncBinary(t) // skips under -short before any setup
	dir := t.TempDir()
	r := &restartStack{t: t, cfg: filepath.Join(dir, "catalogsync.yaml")}
	r.writeConfig(names...)
	storeDir := filepath.Join(dir, "store")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.cs = servers.StartCatalogsync(t, []string{"--config", r.cfg, "--store", storeDir, "--no-docker-config",
		"--poll-check-interval", "1h", "--gc-interval", "1h", "--replica-id", "restarted"})
	st, err := fs.New(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	return r
}

func (r *restartStack) writeConfig(names ...string) {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("catalogs:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  image: %s\n  pollIntervalMinutes: 60\n", n, sample(r.t))
	}
	if err := os.WriteFile(r.cfg, []byte(b.String()), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// waitPublished waits, bounded, until every named catalog is published.
func (r *restartStack) waitPublished(names ...string) {
	r.t.Helper()
	for _, n := range names {
		for i := 0; ; i++ {
			if p, _, err := catalog.Current(context.Background(), r.store, n); err == nil && p.Digest != "" {
				break
			}
			if i > 1200 {
				r.t.Fatalf("catalog %q never published\n%s", n, r.cs.Log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// turn reads the named cluster-wide turn's record.
func (r *restartStack) turn(name string) catalog.LeaseRecord {
	r.t.Helper()
	var rec catalog.LeaseRecord
	for i := 0; ; i++ {
		var err error
		if rec, err = catalog.ReadTurn(context.Background(), r.store, name); err == nil {
			return rec
		}
		if i > 600 {
			r.t.Fatalf("turn %q never written: %v\n%s", name, err, r.cs.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A SIGTERM releases the poll turn and the sync leases; the process
// started again, with two catalogs the store has never seen, syncs both
// at once, although the poll interval is an hour.
func TestServeRestartAfterSIGTERMSyncsNewCatalogs(t *testing.T) {
	r := startRestartStack(t, "before")
	r.waitPublished("before")
	if rec := r.turn(turnPoll); !time.Now().Before(rec.Expires) {
		t.Fatalf("the running process holds no poll turn: %+v", rec)
	}
	r.cs.Stop()
	if !strings.Contains(r.cs.Log(), `msg=stopped`) {
		t.Fatalf("serve did not stop gracefully:\n%s", r.cs.Log())
	}
	if rec := r.turn(turnPoll); time.Now().Before(rec.Expires) {
		t.Errorf("the poll turn outlives the stopped process: held by %s until %s", rec.Instance, rec.Expires)
	}
	if rec, err := catalog.ReadLease(context.Background(), r.store, "before"); err == nil && time.Now().Before(rec.Expires) {
		t.Errorf("the sync lease of %q outlives the stopped process: until %s", "before", rec.Expires)
	}

	r.writeConfig("after-one", "after-two")
	r.cs.Start()
	r.waitPublished("after-one", "after-two")
}

// A process killed with SIGKILL cannot release its turn; the next process
// of the same replica takes it over at its start instead of waiting out
// the interval, and syncs the catalog it has never seen.
func TestServeRestartAfterSIGKILLTakesItsOwnTurn(t *testing.T) {
	r := startRestartStack(t, "before")
	r.waitPublished("before")
	old := r.turn(turnPoll)
	r.cs.Kill()
	r.writeConfig("after")
	r.cs.Start()
	r.waitPublished("after")
	for i := 0; ; i++ {
		rec := r.turn(turnPoll)
		if rec.Instance != old.Instance && time.Now().Before(rec.Expires) {
			break
		}
		if i > 600 {
			t.Fatalf("the restarted replica never took its predecessor's poll turn: %+v\n%s", rec, r.cs.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
