package s3

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/catalogsync/catalogsync/test/servers"
)

// probesLeft lists the bucket with the server's own credentials and
// returns the probe objects in it.
func probesLeft(t *testing.T, m *servers.MinIO, bucket string) []string {
	t.Helper()
	out, err := adminClient(m).ListObjectsV2(testCtx(t), &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range out.Contents {
		if strings.Contains(aws.ToString(o.Key), probePrefix) {
			left = append(left, aws.ToString(o.Key))
		}
	}
	return left
}

// secondPut lets the first create-only write through and answers the
// others with answer: a service that does not honour If-None-Match.
func secondPut(answer func(w http.ResponseWriter)) servers.Fault {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if n.Add(1) == 1 || r.Header.Get("If-None-Match") == "" {
			next.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		answer(w)
	}
}

// New refuses a service that ignores or does not implement conditional
// writes (publishing could not be atomic there), and removes its probe
// in every outcome.
func TestNewChecksConditionalWrites(t *testing.T) {
	m := servers.SharedMinIO(t)
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   error
	}{
		{"honoured", nil, nil},
		{"ignored", func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"5d41402abc4b2a76b9719d911017c592"`)
			w.WriteHeader(http.StatusOK)
		}, ErrNoConditionalWrites},
		{"not implemented", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>`)
		}, ErrNoConditionalWrites},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := newBucket(t, m)
			proxy := servers.NewProxy(t, m.Endpoint, servers.WithClassifier(s3Class))
			if tc.answer != nil {
				proxy.Inject(secondPut(tc.answer), 0, classPut)
			}
			cfg := minioConfig(m, bucket)
			cfg.Endpoint, cfg.Prefix, cfg.MaxAttempts = proxy.URL, "team", 1
			_, err := New(testCtx(t), cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("New = %v, want %v", err, tc.want)
			}
			if n := proxy.Count(classPut); n != 2 {
				t.Errorf("%d create-only writes, want 2", n)
			}
			if left := probesLeft(t, m, bucket); len(left) > 0 {
				t.Fatalf("probes left behind: %q", left)
			}
		})
	}
}

// Credentials that may write but not list are refused for the list, and
// the probe written while the list was asked for is removed.
func TestNewWriteOnlyCredentials(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	cfg := minioConfig(m, bucket)
	cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken = sessionCredentials(t, m, bucket, "s3:PutObject", "s3:DeleteObject")
	_, err := New(testCtx(t), cfg)
	if !errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), ": list: ") {
		t.Fatalf("New = %v, want the list refused", err)
	}
	if left := probesLeft(t, m, bucket); len(left) > 0 {
		t.Fatalf("probes left behind: %q", left)
	}
}
