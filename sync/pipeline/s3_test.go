package pipeline_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/source"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// s3UploadPart classifies the S3 requests that carry a multipart upload's
// parts, for a proxy in front of MinIO.
func s3UploadPart(r *http.Request) string {
	if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") {
		return "UploadPart"
	}
	return servers.Other
}

func s3ReadAll(t *testing.T, s *s3.Store, name string) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := catalog.Open(ctx, s, name)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	// Shared content (format 2) has no sha256 of its own: the tests
	// compare it with a full sync's.
	if sum := sha256.Sum256(b.Bytes()); c.Meta.SHA256 != "" && hex.EncodeToString(sum[:]) != c.Meta.SHA256 {
		t.Fatalf("%s: content does not match its meta", name)
	}
	return b.Bytes()
}

// MinIO stopped while a sync uploads catalog.jsonl: the sync fails with a
// retryable storage error and the catalog published before stays served;
// with MinIO back the next attempt publishes, and GC removes the multipart
// upload the failed attempt could not abort.
func TestS3StorageStopsMidUpload(t *testing.T) {
	// 90 renamed copies of the 3-package catalog: ~15 MB, several parts.
	src := filepath.Join(repoRoot(t), "testdata", "fbc", "community-v4.21-3pkgs", "configs")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	m := servers.StartMinIO(t)
	bucket := m.NewBucket(t)
	// The store talks through a proxy that tells when the first part of
	// a multipart upload goes out.
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3UploadPart))
	store, err := s3.New(ctx, s3.Config{
		Bucket: bucket, Endpoint: proxy.URL, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey, MaxAttempts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer srcs.Close()
	pl := pipeline.New(srcs, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))

	layout := filepath.Join(t.TempDir(), "layout")
	ref := "ocidir://" + layout + ":v1"
	rc := imagebuild.NewRegClient()
	tiny := filepath.Join(repoRoot(t), "testdata", "fbc", "tiny", "configs")
	oldDigest, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(tiny, "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)}); err != nil || res.Digest != oldDigest {
		t.Fatalf("first sync: %+v, %v", res, err)
	}
	old := s3ReadAll(t, store, "c")
	// Byte for byte what catalogd serves, from S3 as from the filesystem.
	if want, err := os.ReadFile(filepath.Join(tiny, "expected_all.json")); err != nil || !bytes.Equal(old, want) {
		t.Fatalf("tiny catalog from S3 differs from catalogd's output (%v)", err)
	}

	// Three copies of the community catalog: about 40 MB of catalog.jsonl,
	// eight parts.
	big := t.TempDir()
	if err := imagebuild.GenerateCopies(src, big, 90); err != nil {
		t.Fatal(err)
	}
	newDigest, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(big, "/configs"))
	if err != nil {
		t.Fatal(err)
	}
	firstPart := make(chan struct{})
	var once sync.Once
	proxy.Inject(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		once.Do(func() { close(firstPart) })
		next.ServeHTTP(w, r)
	}, 1, "UploadPart")
	type outcome struct {
		res pipeline.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)})
		done <- outcome{res, err}
	}()
	select {
	case <-firstPart:
	case o := <-done:
		t.Fatalf("sync ended before uploading a part: %+v %v", o.res, o.err)
	}
	m.Stop()
	o := <-done
	se, ok := pipeline.AsError(o.err)
	if !ok || !se.Retryable || se.Reason != pipeline.ReasonStorage {
		t.Fatalf("sync with MinIO stopped: %v, want a retryable storage error", o.err)
	}
	t.Logf("failed as expected: %v", o.err)

	m.Start()
	if got := s3ReadAll(t, store, "c"); !bytes.Equal(got, old) {
		t.Fatal("the catalog served changed after the failed sync")
	}
	if ptr, _, err := catalog.Current(ctx, store, "c"); err != nil || ptr.Digest != oldDigest {
		t.Fatalf("pointer %+v, %v", ptr, err)
	}
	// The new content shares from the old (nothing, as every file
	// changed), so its own lines go to delta.jsonl.
	catalogKey, _ := catalog.ContentKey("c", newDigest)
	newDir := strings.TrimSuffix(catalogKey, "catalog.jsonl")
	contentKey := newDir + "delta.jsonl"
	if l, err := store.List(ctx, newDir); err != nil || len(l) != 0 {
		t.Fatalf("failed sync left objects %v, %v", l, err)
	}
	// The failed upload could not be aborted with the server gone.
	ups, err := store.StaleUploads(ctx, "catalogs/", -1, contentKey)
	if err != nil || len(ups) == 0 {
		t.Fatalf("no upload left by the interrupted Put (%v): this test would prove nothing", err)
	}

	res, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)})
	if err != nil || res.Action != pipeline.ActionPublished || res.Digest != newDigest {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	got := s3ReadAll(t, store, "c")
	if n := bytes.Count(got, []byte("\n")); n != res.Meta.Objects || len(got) < 10<<20 { // at least two 5 MiB parts
		t.Fatalf("new catalog: %d bytes, %d lines, meta says %d objects", len(got), n, res.Meta.Objects)
	}

	rep, err := catalog.GC(ctx, store, catalog.GCOptions{Catalogs: []string{"c"}, LeftoverAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	var aborted int
	for _, it := range rep.Deleted {
		// Bytes may be 0: the parts in flight when MinIO stopped never
		// completed.
		if it.Reason != catalog.GCLeftover || it.Keys[0] != contentKey {
			t.Errorf("GC deleted %+v", it)
		}
		aborted++
	}
	if aborted != len(ups) {
		t.Errorf("GC aborted %d uploads, %d were left", aborted, len(ups))
	}
	if ups, err := store.StaleUploads(ctx, "catalogs/", -1, contentKey); err != nil || len(ups) != 0 {
		t.Fatalf("uploads after GC: %v, %v", ups, err)
	}
	if !bytes.Equal(s3ReadAll(t, store, "c"), got) {
		t.Fatal("GC changed the served catalog")
	}
	// The previous digest is kept (Keep 2), the new one is current.
	if _, ok, err := catalog.HasContent(ctx, store, "c", oldDigest); err != nil || !ok {
		t.Fatalf("previous content gone: %v", err)
	}
}

// s3RangedContentGET classifies ranged reads of a catalog.jsonl.
func s3RangedContentGET(r *http.Request) string {
	if r.Method == http.MethodGet && r.Header.Get("Range") != "" && strings.HasSuffix(r.URL.Path, "/catalog.jsonl") {
		return "RangedContentGET"
	}
	return servers.Other
}

// Incremental sync into MinIO: the unchanged files come from the published
// catalog.jsonl in two ranged reads (before and after the changed file),
// and the result is byte for byte a full sync's.
func TestS3Incremental(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := servers.StartMinIO(t)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3RangedContentGET))
	newStore := func(bucket string) *s3.Store {
		st, err := s3.New(ctx, s3.Config{Bucket: bucket, Endpoint: proxy.URL, Region: m.Region, PathStyle: true,
			AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	srcs, err := source.New(source.WithDockerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer srcs.Close()
	v1 := t.TempDir()
	src := filepath.Join(repoRoot(t), "testdata", "fbc", "community-v4.21-3pkgs", "configs")
	if err := imagebuild.GenerateCopies(src, v1, 8); err != nil {
		t.Fatal(err)
	}
	v2 := copyTree(t, v1)
	changed := filepath.Join(v2, "copy4", "aws-neuron-operator", "catalog.yaml")
	b, err := os.ReadFile(changed)
	if err != nil {
		t.Fatal(err)
	}
	write(t, changed, bytes.Replace(b, []byte("image: "), []byte("image: mirror.example/"), 1))

	layout := filepath.Join(t.TempDir(), "layout")
	ref := "ocidir://" + layout + ":v1"
	rc := imagebuild.NewRegClient()
	store := newStore(m.NewBucket(t))
	pl := pipeline.New(srcs, store, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true))
	for i, dir := range []string{v1, v2} {
		if _, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(dir, "/configs")); err != nil {
			t.Fatal(err)
		}
		proxy.ResetCounts()
		res, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)})
		if err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
		if want := []int{0, res.Files - 1}[i]; res.FilesReused != want || res.Files != 24 {
			t.Fatalf("sync %d: %d of %d files reused, want %d of 24", i+1, res.FilesReused, res.Files, want)
		}
	}
	if n := proxy.Count("RangedContentGET"); n != 2 {
		t.Fatalf("%d ranged reads of the published catalog.jsonl, want 2", n)
	}
	full := newStore(m.NewBucket(t))
	if _, err := pipeline.New(srcs, full, pipeline.WithTempDir(t.TempDir()), pipeline.WithVerifyReuse(true)).Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)}); err != nil {
		t.Fatal(err)
	}
	want := s3ReadAll(t, full, "c")
	if !bytes.Equal(s3ReadAll(t, store, "c"), want) {
		t.Fatal("incremental catalog differs from the full sync's")
	}

	// Without the check mode nothing of the published catalog.jsonl is
	// read, and only the changed file's lines are uploaded.
	shared := newStore(m.NewBucket(t))
	pl = pipeline.New(srcs, shared, pipeline.WithTempDir(t.TempDir()))
	for i, dir := range []string{v1, v2} {
		if _, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(dir, "/configs")); err != nil {
			t.Fatal(err)
		}
		proxy.ResetCounts()
		if _, err := pl.Run(ctx, catalogspec.Catalog{Name: "c", Image: catalogspec.ParseImage(ref)}); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
	}
	if n := proxy.Count("RangedContentGET"); n != 0 {
		t.Fatalf("%d ranged reads of the published catalog.jsonl, want none", n)
	}
	if got := s3ReadAll(t, shared, "c"); !bytes.Equal(got, want) {
		t.Fatal("shared catalog differs from the full sync's")
	}
	p, _, err := catalog.Current(ctx, shared, "c")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := catalog.ContentKey("c", p.Digest)
	delta, err := shared.Stat(ctx, strings.TrimSuffix(key, "catalog.jsonl")+"delta.jsonl")
	if err != nil || delta.Size <= 0 || delta.Size > int64(len(want))/20 {
		t.Fatalf("delta.jsonl %+v, %v: want only the changed file's lines of %d bytes", delta, err, len(want))
	}
}
