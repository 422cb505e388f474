package s3

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/test/servers"
)

// publicRead lets anyone GET the bucket's objects, as a bucket that
// serves a fleet's reads is set up.
func publicRead(t *testing.T, m *servers.MinIO, bucket string) {
	t.Helper()
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, bucket)
	if _, err := adminClient(m).PutBucketPolicy(testCtx(t), &awss3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
}

// Objects written with headers, or copied with them (CopyObject, and the
// streamed copy of an object over the copy limit), answer a plain HTTP
// GET with those headers, ranges and conditional requests included.
func TestHeadersReachPlainHTTPReaders(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	publicRead(t, m, bucket)
	cfg := minioConfig(m, bucket)
	cfg.Prefix = "team/a"
	s := newTestStore(t, cfg)
	ctx := testCtx(t)
	data := bytes.Repeat([]byte(`{"schema":"olm.package"}`+"\n"), 300_000) // 7.5 MB: multipart
	h := storage.Headers{ContentType: "application/jsonl", ContentEncoding: "gzip"}
	if _, err := storage.PutHeaders(ctx, s, "obj/put", bytes.NewReader(data), h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "obj/plain", bytes.NewReader(data[:100])); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Copy(ctx, s, "obj/copied", "obj/plain", storage.Headers{ContentType: "application/jsonl"}); err != nil {
		t.Fatal(err)
	}
	small := newTestStore(t, cfg)
	small.maxCopy = 50
	if _, err := storage.Copy(ctx, small, "obj/streamed", "obj/plain", storage.Headers{ContentType: "application/jsonl"}); err != nil {
		t.Fatal(err)
	}
	base := m.Endpoint + "/" + bucket + "/team/a/"
	for key, want := range map[string][3]string{
		"obj/put":      {"application/jsonl", "gzip", fmt.Sprint(len(data))},
		"obj/copied":   {"application/jsonl", "", "100"},
		"obj/streamed": {"application/jsonl", "", "100"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+key, nil)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := [3]string{resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), fmt.Sprint(len(body))}
		if resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("GET %s: %d %v, want %v", key, resp.StatusCode, got, want)
		}
		if !bytes.Equal(body, data[:len(body)]) {
			t.Errorf("GET %s: bytes differ", key)
		}
		etag := resp.Header.Get("ETag")
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+key, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s If-None-Match its ETag: %d", key, resp.StatusCode)
		}
	}
	if s.maxCopy != maxCopy || !strings.HasPrefix(copySource("b", "x y/z"), "b/x%20y/z") {
		t.Errorf("copy limit %d, source %s", s.maxCopy, copySource("b", "x y/z"))
	}
}
