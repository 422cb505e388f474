package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/fs"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// coldRun is one scale-from-zero measurement, from the exec of the
// process.
type coldRun struct {
	ready, ack, published, firstByte time.Duration
}

// TestScaleFromZero (opt-in, CATALOGSYNC_E2E_COLDSTART=1) runs the service
// behind the activator stand-in with no process running: the registry's
// push notification starts it, is held until /readyz passes, and must be
// acknowledged (never lost: the push is published); after the idle stop, a
// content request starts it again. It reports medians of 5 of exec ->
// ready, -> webhook acknowledged, -> published and (a second cold start)
// -> first /all byte, on fs and MinIO, for the 13.9 MB community catalog
// and its 220 MB expansion (both from ../shared; skipped without).
func TestScaleFromZero(t *testing.T) {
	if os.Getenv("CATALOGSYNC_E2E_COLDSTART") == "" {
		t.Skip("opt-in: CATALOGSYNC_E2E_COLDSTART=1 measures scale-from-zero (docs/benchmarks-opt-in.md)")
	}
	src := sharedCommunity(t)
	sizes := []struct{ name, dir string }{{"13.9 MB", src}, {"220 MB", generated(t, src, 16)}}
	var report []string
	for _, store := range []string{"fs", "MinIO"} {
		for _, sz := range sizes {
			t.Run(store+" "+sz.name, func(t *testing.T) {
				runs := coldStarts(t, store, sz.dir, 5)
				med := func(f func(coldRun) time.Duration) string {
					var ds []time.Duration
					for _, r := range runs {
						ds = append(ds, f(r))
					}
					slices.Sort(ds)
					return fmt.Sprintf("%d ms", ds[len(ds)/2].Milliseconds())
				}
				row := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", sz.name, store,
					med(func(r coldRun) time.Duration { return r.ready }), med(func(r coldRun) time.Duration { return r.ack }),
					med(func(r coldRun) time.Duration { return r.published }), med(func(r coldRun) time.Duration { return r.firstByte }))
				t.Log(row)
				report = append(report, row)
			})
		}
	}
	t.Logf("scale from zero, medians of 5 (from exec):\n| catalog | store | ready | webhook acknowledged | published | first /all byte |\n|---|---|---|---|---|---|\n%s",
		strings.Join(report, "\n"))
}

func coldStarts(t *testing.T, store, dir string, n int) []coldRun {
	s := newStack(t, options{noReplica: true})
	target := servers.FreeAddr(t)
	a := newActivator(t, s.addrs[0], target, servers.CatalogsyncBinary(t), time.Second)
	s.createCatalog("cold", "acme/cold:v1")
	img := imagebuild.FromDir(dir, "/configs")
	env := []string{"REGISTRY_HOOK_SECRET=" + hookSecret, "CI_HOOK_SECRET=" + ciSecret,
		"AWS_ACCESS_KEY_ID=" + s.minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.minio.SecretKey}
	var runs []coldRun
	for i := range n {
		// A fresh store each run: the pull is a whole one.
		args, st := coldArgs(t, s, store)
		a.configure(args, env, filepath.Join(t.TempDir(), "catalogsync.log"))
		hooks := len(a.hookReplies())
		d := s.push("acme/cold:v1", img)
		var r coldRun
		var reply hookReply
		eventually(t, "the push notification to be acknowledged", 3*time.Minute, func() bool {
			h := a.hookReplies()
			if len(h) > hooks {
				reply = h[hooks]
				return true
			}
			return false
		})
		if reply.status != http.StatusAccepted {
			t.Fatalf("run %d: webhook answered %d through the activator, want 202", i, reply.status)
		}
		// The service's own clock (the pointer's publish time), not this
		// test's polling, says when.
		var pubAt time.Time
		eventually(t, "the pushed digest to be published (the first webhook is never lost)", 5*time.Minute, func() bool {
			p, _, err := catalog.Current(context.Background(), st, "cold")
			pubAt = p.PublishedAt
			return err == nil && p.Digest == d
		})
		execAt, readyAt := a.times()
		r.ready, r.ack, r.published = readyAt.Sub(execAt), reply.at.Sub(execAt), pubAt.Sub(execAt)
		awaitIdle(t, a)

		// Cold again: a content request starts the service.
		resp, err := http.Get("http://" + s.addrs[0] + "/catalogs/cold/api/v1/all")
		if err != nil {
			t.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, one); err != nil || resp.StatusCode != 200 {
			t.Fatalf("run %d: cold /all: %d %v", i, resp.StatusCode, err)
		}
		firstAt := time.Now()
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		execAt, _ = a.times()
		r.firstByte = firstAt.Sub(execAt)
		awaitIdle(t, a)
		t.Logf("run %d: exec -> ready %v, -> webhook 202 %v, -> published %v; cold /all first byte %v", i,
			r.ready.Round(time.Millisecond), r.ack.Round(time.Millisecond), r.published.Round(time.Millisecond), r.firstByte.Round(time.Millisecond))
		runs = append(runs, r)
	}
	if a.starts != 2*n {
		t.Errorf("%d process starts for %d cold requests", a.starts, 2*n)
	}
	return runs
}

// awaitIdle waits for the activator's idle stop, which a real scaler
// would not do while the service still syncs: the stand-in only stops a
// service with no sync running (deploy/README.md, "Scale to zero").
func awaitIdle(t *testing.T, a *activator) {
	t.Helper()
	eventually(t, "no sync running", 5*time.Minute, func() bool { return !a.running() || !a.syncing() })
	if err := a.waitStopped(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// coldArgs is the replica's command line on a fresh store, and that store
// for the test to read.
func coldArgs(t *testing.T, s *stack, kind string) ([]string, storage.Store) {
	t.Helper()
	var args []string
	src := s.args[0]
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case "--s3-bucket", "--s3-endpoint", "--s3-region":
			i++
		case "--s3-path-style":
		default:
			args = append(args, src[i])
		}
	}
	if kind == "fs" {
		dir := t.TempDir()
		st, err := fs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return append(args, "--store", dir), st
	}
	bucket := s.minio.NewBucket(t)
	st, err := s3.New(context.Background(), s3.Config{Bucket: bucket, Endpoint: s.minio.Endpoint, Region: s.minio.Region, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return append(args, "--s3-bucket", bucket, "--s3-endpoint", s.minio.Endpoint, "--s3-region", s.minio.Region, "--s3-path-style"), st
}
