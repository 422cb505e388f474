package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/go-chi/chi/v5"

	"github.com/catalogsync/catalogsync/handlers/content"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// get GETs url with a plain net/http client, as operator-controller's
// catalog client does, with extra request headers.
func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// With --static-layout and --base-url pointing at the bucket (under a
// store prefix), a plain HTTP client reads /api/v1/all from MinIO itself:
// the bytes catalogd serves (the fixture), the same as a replica's answer,
// with ranges, conditional requests and the gzip variant; a reader of the
// previous catalog keeps its bytes across a publish, and the previous
// digest stays addressable.
func TestStaticLayoutServesFromTheBucket(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := m.NewBucket(t)
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, bucket)
	ctx := context.Background()
	if _, err := m.Admin().PutBucketPolicy(ctx, &awss3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	s3Env(t, m, bucket)
	t.Setenv("CATALOGSYNC_S3_PREFIX", "fleet/a/")
	t.Setenv("CATALOGSYNC_STATIC_LAYOUT", "true")

	tiny := filepath.Join("..", "..", "testdata", "fbc", "tiny", "configs")
	want, err := os.ReadFile(filepath.Join(tiny, "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(t.TempDir(), "oci")
	ref := "ocidir://" + layout + ":v1"
	rc := imagebuild.NewRegClient()
	push := func(dir string) string {
		d, err := imagebuild.Push(ctx, rc, ref, imagebuild.FromDir(dir, "/configs"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	sync := func() {
		t.Helper()
		if code, out, stderr := runCLI(t, "sync", "--name", "tiny", "--image", ref); code != 0 {
			t.Fatalf("sync: exit %d\n%s%s", code, out, stderr)
		}
	}
	first := push(tiny)
	sync()

	// What status.urls.base becomes with --base-url at the bucket.
	baseURL := m.Endpoint + "/" + bucket + "/fleet/a/"
	base := strings.TrimRight(baseURL, "/") + "/catalogs/tiny"
	resp, fromBucket := get(t, base+"/api/v1/all")
	if resp.StatusCode != http.StatusOK || !bytes.Equal(fromBucket, want) || resp.Header.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("GET from the bucket: %d %s, %d bytes; want the %d of the fixture", resp.StatusCode, resp.Header.Get("Content-Type"), len(fromBucket), len(want))
	}
	store, err := s3.New(ctx, s3.Config{Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey, Prefix: "fleet/a"})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	content.New(store).Mount(r)
	replica := httptest.NewServer(r)
	defer replica.Close()
	if resp, fromReplica := get(t, replica.URL+"/catalogs/tiny/api/v1/all"); resp.StatusCode != http.StatusOK || !bytes.Equal(fromReplica, fromBucket) {
		t.Fatalf("replica: %d, %d bytes; the bucket %d", resp.StatusCode, len(fromReplica), len(fromBucket))
	}

	etag := resp.Header.Get("ETag")
	if resp, b := get(t, base+"/api/v1/all", "Range", "bytes=10-99"); resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, want[10:100]) {
		t.Errorf("Range: %d, %d bytes", resp.StatusCode, len(b))
	}
	if resp, _ := get(t, base+"/api/v1/all", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match its ETag: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/api/v1/all", "If-Match", `"not-it"`); resp.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("If-Match another ETag: %d", resp.StatusCode)
	}
	resp, gz := get(t, base+"/api/v1/all.gz", "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != "application/jsonl" {
		t.Errorf("all.gz headers: %v", resp.Header)
	}
	z, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(z); err != nil || !bytes.Equal(plain, want) {
		t.Errorf("all.gz gunzips to %d bytes (%v), want %d", len(plain), err, len(want))
	}

	// A larger catalog, then back to the first while a reader is in the
	// middle of the larger one's /all.
	second := push(filepath.Join("..", "..", "testdata", "fbc", "community-v4.21-3pkgs", "configs"))
	sync()
	_, secondAll := get(t, base+"/api/v1/all")
	if len(secondAll) <= len(want) {
		t.Fatalf("after the second publish /all has %d bytes", len(secondAll))
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, base+"/api/v1/all", nil)
	inFlight, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer inFlight.Body.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(inFlight.Body, head); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, "sync", "--name", "tiny", "--image", "ocidir://"+layout+"@"+first); code != 0 {
		t.Fatalf("sync back: exit %d\n%s%s", code, out, stderr)
	}
	if _, b := get(t, base+"/api/v1/all"); !bytes.Equal(b, want) {
		t.Errorf("after publishing the first digest again /all has %d bytes, want %d", len(b), len(want))
	}
	rest, err := io.ReadAll(inFlight.Body)
	if err != nil || !bytes.Equal(append(head, rest...), secondAll) {
		t.Errorf("the reader in flight read %d bytes (%v), want the %d it started on", len(head)+len(rest), err, len(secondAll))
	}
	key, _ := catalog.ContentKey("tiny", second)
	resp, b := get(t, baseURL+key)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, secondAll) || resp.Header.Get("Content-Type") != "application/jsonl" {
		t.Errorf("the earlier digest's %s: %d %s, %d bytes", key, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
	}
}
