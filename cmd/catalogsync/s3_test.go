package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/servers"
)

func s3Env(t *testing.T, m *servers.MinIO, bucket string) {
	t.Setenv("CATALOGSYNC_S3_ENDPOINT", m.Endpoint)
	t.Setenv("CATALOGSYNC_S3_REGION", m.Region)
	t.Setenv("CATALOGSYNC_S3_PATH_STYLE", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
	t.Setenv("CATALOGSYNC_S3_BUCKET", bucket)
}

func TestSyncAndGCOnS3(t *testing.T) {
	m := servers.SharedMinIO(t)
	s3Env(t, m, m.NewBucket(t))
	code, out, stderr := runCLI(t, "sync", "--name", "sample", "--image", sample(t))
	if code != 0 || !strings.Contains(out, "Published") || !strings.Contains(out, "stored under s3://") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "sync", "--name", "sample", "--image", sample(t))
	if code != 0 || !strings.Contains(out, "UpToDate") {
		t.Fatalf("second sync: exit %d\n%s", code, out)
	}
	// With the catalog not configured (and no wait for other replicas to
	// touch it), a dry run would delete the whole catalog and deletes
	// nothing.
	code, out, stderr = runCLI(t, "gc", "--dry-run", "--grace", "0", "--unconfigured-age", "0", "--json", "--config", writeConfig(t, "other"))
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s%s", code, out, stderr)
	}
	var rep struct {
		DryRun  bool
		Deleted []struct{ Keys []string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.DryRun || len(rep.Deleted) == 0 {
		t.Fatalf("gc report %s: %v", out, err)
	}
	code, out, _ = runCLI(t, "sync", "--name", "sample", "--image", sample(t))
	if code != 0 || !strings.Contains(out, "UpToDate") {
		t.Fatalf("dry run deleted something: exit %d\n%s", code, out)
	}
}

func TestServeRefusesMissingBucket(t *testing.T) {
	m := servers.SharedMinIO(t)
	s3Env(t, m, "no-such-bucket-here")
	code, _, stderr := runCLI(t, "serve", "--addr", "127.0.0.1:0")
	if code != 1 || !strings.Contains(stderr, "no-such-bucket-here") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	s3Env2 := m.NewBucket(t)
	t.Setenv("CATALOGSYNC_S3_BUCKET", s3Env2)
	code, _, stderr = runCLI(t, "serve", "--addr", "127.0.0.1:0")
	if code != 1 || !strings.Contains(strings.ToLower(stderr), "credential") {
		t.Fatalf("wrong secret: exit %d: %s", code, stderr)
	}
}

func TestStoreDirAndBucketConflict(t *testing.T) {
	t.Setenv("CATALOGSYNC_S3_BUCKET", "b")
	code, _, stderr := runCLI(t, "sync", "--name", "x", "--image", sample(t), "--store", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "choose one") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
