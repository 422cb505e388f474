package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/storagetest"
	"github.com/catalogsync/catalogsync/test/servers"
)

func TestConformance(t *testing.T) {
	m := servers.SharedMinIO(t)
	t.Run("bucket", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Store {
			return newTestStore(t, minioConfig(m, newBucket(t, m)))
		})
	})
	// Under a prefix, in a bucket other deployments write to as well.
	t.Run("prefix", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Store {
			bucket := newBucket(t, m)
			other := newTestStore(t, minioConfig(m, bucket))
			// Not "deploy-a" itself: MinIO cannot list below a prefix
			// that is also an object's full name (AWS can).
			for _, k := range []string{"deploy-b/x", "deploy-a.txt", "deploy-ab/y", "z"} {
				if _, err := other.Put(testCtx(t), k, strings.NewReader(k)); err != nil {
					t.Fatal(err)
				}
			}
			cfg := minioConfig(m, bucket)
			cfg.Prefix = "deploy-a/"
			return newTestStore(t, cfg)
		})
	})
}

func TestPrefixesShareABucket(t *testing.T) {
	m := servers.SharedMinIO(t)
	ctx := testCtx(t)
	bucket := newBucket(t, m)
	stores := map[string]*Store{}
	for _, p := range []string{"", "team-a", "team-b/"} {
		cfg := minioConfig(m, bucket)
		cfg.Prefix = p
		stores[p] = newTestStore(t, cfg)
	}
	for p, s := range stores {
		if _, err := s.Put(ctx, "catalogs/x/current", strings.NewReader("from "+p)); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range stores {
		rc, err := s.Get(ctx, "catalogs/x/current", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != "from "+p {
			t.Errorf("store %q reads %q", p, b)
		}
	}
	list, err := stores["team-a"].List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != "catalogs/x/current" {
		t.Errorf("team-a lists %+v", list)
	}
	list, err = stores[""].List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, in := range list {
		keys = append(keys, in.Key)
	}
	if want := []string{"catalogs/x/current", "team-a/catalogs/x/current", "team-b/catalogs/x/current"}; !slices.Equal(keys, want) {
		t.Errorf("unprefixed store lists %q, want %q", keys, want)
	}
}

func TestNewRefusesBadSetups(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	ctx := testCtx(t)

	cases := []struct {
		name string
		edit func(*Config)
		want error
		msg  string
	}{
		{"no bucket", func(c *Config) { c.Bucket = "" }, ErrConfig, "no bucket"},
		{"bad prefix", func(c *Config) { c.Prefix = "../up" }, ErrConfig, "prefix"},
		{"bad endpoint", func(c *Config) { c.Endpoint = "minio:9000" }, ErrConfig, "endpoint"},
		{"small parts", func(c *Config) { c.PartSize = 1 << 20 }, ErrConfig, "part size"},
		{"missing bucket", func(c *Config) { c.Bucket = "does-not-exist" }, ErrNoSuchBucket, "does-not-exist"},
		{"unknown access key", func(c *Config) { c.AccessKeyID = "nobody" }, ErrBadCredentials, "InvalidAccessKeyId"},
		{"wrong secret", func(c *Config) { c.SecretAccessKey = "wrong-secret-key" }, ErrBadCredentials, "SignatureDoesNotMatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := minioConfig(m, bucket)
			tc.edit(&cfg)
			_, err := New(ctx, cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("New = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
		})
	}

	t.Run("no credentials anywhere", func(t *testing.T) {
		isolateSDKEnv(t)
		cfg := minioConfig(m, bucket)
		cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
		_, err := New(ctx, cfg)
		if !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("New = %v, want ErrBadCredentials", err)
		}
	})

	t.Run("credentials from the default chain", func(t *testing.T) {
		isolateSDKEnv(t)
		t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
		cfg := minioConfig(m, bucket)
		cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
		cfg.Region = ""
		if _, err := New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	})

	// Temporary credentials from MinIO's STS whose session policy allows
	// reading and listing only: a real read-only principal, made with
	// nothing but the S3/STS APIs.
	t.Run("read-only credentials", func(t *testing.T) {
		cfg := minioConfig(m, bucket)
		cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken = readOnlyCredentials(t, m, bucket)
		_, err := New(ctx, cfg)
		if !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrAccessDenied) {
			t.Fatalf("New = %v, want ErrReadOnly", err)
		}
		// The same credentials can read: the check is not just failing.
		s, err := open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, ""); err != nil {
			t.Fatalf("read-only credentials cannot list: %v", err)
		}
	})

	t.Run("server down", func(t *testing.T) {
		cfg := minioConfig(m, bucket)
		cfg.Endpoint = "http://127.0.0.1:1"
		cfg.MaxAttempts = 1
		_, err := New(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "connect") {
			t.Fatalf("New = %v, want a connection error", err)
		}
	})
}

// isolateSDKEnv hides the developer's AWS configuration from the SDK.
func isolateSDKEnv(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
		"AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_CA_BUNDLE", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// A failed or cancelled multipart Put aborts its upload: no parts stay.
func TestFailedPutAbortsUpload(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
	cfg := minioConfig(m, bucket)
	cfg.Endpoint = proxy.URL
	cfg.PartSize = 5 << 20
	s := newTestStore(t, cfg)
	ctx := testCtx(t)

	// Fails after three parts' worth: the upload is multipart by then.
	_, err := s.Put(ctx, "big/failing", io.MultiReader(bytes.NewReader(make([]byte, 16<<20)), errReader{}))
	if !errors.Is(err, errBroken) {
		t.Fatalf("Put = %v, want the reader's error", err)
	}
	c, cancel := context.WithCancel(ctx)
	r := &cancellingReader{n: 12 << 20, cancel: cancel}
	_, err = s.Put(c, "big/cancelled", r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Put = %v, want context.Canceled", err)
	}
	// Both went multipart, or this test proves nothing, and both were
	// aborted.
	if c, a := proxy.Count(classCreateUpload), proxy.Count(classAbortUpload); c != 2 || a != 2 {
		t.Fatalf("%d uploads created, %d aborted; want 2 and 2", c, a)
	}
	if left := pendingUploads(t, m, bucket, "big/failing", "big/cancelled"); len(left) != 0 {
		t.Fatalf("uploads left behind: %q", left)
	}
	for _, k := range []string{"big/failing", "big/cancelled"} {
		if _, err := s.Stat(ctx, k); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%s) = %v", k, err)
		}
	}
}

var errBroken = errors.New("broken reader")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// cancellingReader yields n zero bytes, cancelling after the first half.
type cancellingReader struct {
	n, read int
	cancel  context.CancelFunc
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	if r.read >= r.n/2 {
		r.cancel()
	}
	k := min(len(p), r.n-r.read)
	clear(p[:k])
	r.read += k
	return k, nil
}

// An upload whose writer died (begun here straight through the API) is
// listed with its size, kept while young and aborted once stale.
func TestStaleUploads(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	ctx := testCtx(t)
	admin := adminClient(m)
	begin := func(key string) {
		up, err := admin.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = admin.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 1234))})
		if err != nil {
			t.Fatal(err)
		}
	}
	mine := []string{"mine/catalogs/c/sha256-x/catalog.jsonl", "mine/with space+plus", "mine/catalogs/c/sha256-y/index"}
	for _, k := range mine {
		begin(k)
	}
	begin("theirs/catalogs/c/sha256-x/catalog.jsonl")

	check := func(t *testing.T, s *Store, prefix string, hints []string, want []string) {
		t.Helper()
		ups, err := s.StaleUploads(ctx, prefix, 0, hints...)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range ups {
			keys = append(keys, u.Key)
			if u.Size != 1234 || u.UploadID == "" || time.Since(u.Initiated) > time.Minute {
				t.Errorf("upload %+v", u)
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("StaleUploads = %q, want %q", keys, want)
		}
	}
	cfg := minioConfig(m, bucket)
	cfg.Prefix = "mine"
	s := newTestStore(t, cfg)
	// MinIO lists a prefix's uploads only by exact key: hints find them.
	check(t, s, "", []string{"catalogs/c/sha256-x/catalog.jsonl", "with space+plus", "catalogs/c/sha256-x/index"},
		[]string{"catalogs/c/sha256-x/catalog.jsonl", "with space+plus"})
	// A key prefix confines them (and hints outside it are refused).
	check(t, s, "catalogs/", []string{"catalogs/c/sha256-x/catalog.jsonl", "catalogs/c/sha256-y/index"},
		[]string{"catalogs/c/sha256-x/catalog.jsonl", "catalogs/c/sha256-y/index"})
	if _, err := s.StaleUploads(ctx, "catalogs/", 0, "with space+plus"); !errors.Is(err, storage.ErrInvalidKey) {
		t.Errorf("hint outside the prefix: %v", err)
	}
	// Without a prefix MinIO lists what it began since it started.
	all := append(slices.Clone(mine), "theirs/catalogs/c/sha256-x/catalog.jsonl")
	slices.Sort(all)
	check(t, newTestStore(t, minioConfig(m, bucket)), "", nil, all)

	if done, err := s.AbortStaleUploads(ctx, "", time.Hour, "with space+plus"); err != nil || len(done) != 0 {
		t.Fatalf("young uploads aborted: %v %v", done, err)
	}
	done, err := s.AbortStaleUploads(ctx, "", -1, "with space+plus", "catalogs/c/sha256-y/index")
	if err != nil || len(done) != 2 {
		t.Fatalf("AbortStaleUploads = %v, %v", done, err)
	}
	left := pendingUploads(t, m, bucket, append(mine, "theirs/catalogs/c/sha256-x/catalog.jsonl")...)
	if want := []string{mine[0], "theirs/catalogs/c/sha256-x/catalog.jsonl"}; !slices.Equal(left, want) {
		t.Fatalf("left %q, want %q", left, want)
	}
}

// Put holds no part in the heap, whatever the object's size: the heap
// peak for 4x the data stays about the same, and small.
func TestPutMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 240 MB")
	}
	m := servers.SharedMinIO(t)
	s := newTestStore(t, minioConfig(m, newBucket(t, m)))
	ctx := testCtx(t)
	peaks := map[int64]uint64{}
	for _, size := range []int64{48 << 20, 192 << 20} {
		stop := heapPeak()
		in, err := s.Put(ctx, fmt.Sprintf("flat/%d", size), &noiseReader{n: size})
		peak := stop()
		if err != nil {
			t.Fatal(err)
		}
		if in.Size != size {
			t.Fatalf("Put size %d, want %d", in.Size, size)
		}
		peaks[size] = peak
		t.Logf("Put %d MiB: heap peak +%.1f MiB", size>>20, float64(peak)/(1<<20))
	}
	// Parts wait in a scratch file, not the heap (they took 15 MiB there
	// with the SDK's transfer manager); allow for the SDK's own buffers and
	// a GC that lags on a loaded machine.
	const bound = 8 << 20
	for size, p := range peaks {
		if p > bound {
			t.Errorf("Put of %d MiB grew the heap by %d MiB, bound %d MiB", size>>20, p>>20, bound>>20)
		}
	}
	if big, small := peaks[192<<20], peaks[48<<20]; big > small+16<<20 {
		t.Errorf("heap peak grows with size: %d MiB for 48 MiB, %d MiB for 192 MiB", small>>20, big>>20)
	}
}
