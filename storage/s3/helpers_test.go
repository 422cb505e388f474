package s3

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/catalogsync/catalogsync/test/servers"
)

// adminClient talks to m with the root credentials, outside any Store: it
// makes buckets and inspects what a Store left behind.
func adminClient(m *servers.MinIO) *awss3.Client { return m.Admin() }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newBucket creates a bucket with a fresh name.
func newBucket(t testing.TB, m *servers.MinIO) string { return m.NewBucket(t) }

func minioConfig(m *servers.MinIO, bucket string) Config {
	return Config{
		Bucket: bucket, Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey,
	}
}

func newTestStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// pendingUploads lists the unfinished multipart uploads of the given keys
// (full object names) as the server sees them, one listing per key: MinIO
// takes a ListMultipartUploads prefix as an exact name.
func pendingUploads(t testing.TB, m *servers.MinIO, bucket string, keys ...string) []string {
	t.Helper()
	var out []string
	for _, k := range keys {
		res, err := adminClient(m).ListMultipartUploads(testCtx(t), &awss3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range res.Uploads {
			out = append(out, aws.ToString(u.Key))
		}
	}
	return out
}

// heapPeak samples the live heap until stop is called and returns the
// highest value seen above the heap at start (after a GC).
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// readOnlyCredentials asks MinIO's STS for temporary credentials of the
// root user narrowed by a session policy to reading and listing bucket.
func readOnlyCredentials(t testing.TB, m *servers.MinIO, bucket string) (key, secret, token string) {
	t.Helper()
	return sessionCredentials(t, m, bucket, "s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation")
}

// sessionCredentials are temporary credentials from MinIO's STS whose
// session policy allows only actions on bucket.
func sessionCredentials(t testing.TB, m *servers.MinIO, bucket string, actions ...string) (key, secret, token string) {
	t.Helper()
	client := sts.New(sts.Options{
		Region:       m.Region,
		BaseEndpoint: aws.String(m.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, ""),
	})
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow",` +
		`"Action":["` + strings.Join(actions, `","`) + `"],` +
		`"Resource":["arn:aws:s3:::` + bucket + `","arn:aws:s3:::` + bucket + `/*"]}]}`
	out, err := client.AssumeRole(testCtx(t), &sts.AssumeRoleInput{
		RoleArn:         aws.String("arn:aws:iam::000000000000:role/read-only"), // required by the SDK, unused by MinIO
		RoleSessionName: aws.String("catalogsync-test"),
		Policy:          aws.String(policy),
	})
	if err != nil {
		t.Fatalf("STS AssumeRole: %v", err)
	}
	c := out.Credentials
	return aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken)
}

// Request classes of s3Class, for a servers.Proxy in front of MinIO.
const (
	classCreateUpload = "CreateMultipartUpload"
	classUploadPart   = "UploadPart"
	classComplete     = "CompleteMultipartUpload"
	classAbortUpload  = "AbortMultipartUpload"
	classPut          = "PutObject"
	classOther        = "other"
)

func s3Class(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		return classCreateUpload
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return classUploadPart
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return classComplete
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return classAbortUpload
	case r.Method == http.MethodPut:
		return classPut
	}
	return classOther
}
