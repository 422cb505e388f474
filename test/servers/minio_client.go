package servers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// Admin returns an S3 client with the root credentials, for tests that
// make buckets or inspect what a store left behind.
func (m *MinIO) Admin() *awss3.Client {
	return awss3.New(awss3.Options{
		Region:       m.Region,
		BaseEndpoint: aws.String(m.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, ""),
	})
}

// NewBucket creates a bucket with a fresh name and returns the name.
func (m *MinIO) NewBucket(t testing.TB) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "t-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.Admin().CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}
