package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// readOnlyEnv returns credentials that may only read the bucket's
// catalogs/ (MinIO's STS AssumeRole with the policy of docs/fleet.md),
// as AWS_* variables, after checking that they cannot write.
func (f *fleet) readOnlyEnv(t *testing.T) []string {
	t.Helper()
	policy := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::` + f.bucket + `/catalogs/*"]},` +
		`{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::` + f.bucket + `"],"Condition":{"StringLike":{"s3:prefix":["catalogs/*"]}}}]}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := sts.New(sts.Options{
		Region: f.minio.Region, BaseEndpoint: aws.String(f.minio.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(f.minio.AccessKey, f.minio.SecretKey, ""),
	})
	out, err := client.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:xxx:xxx:xxx:xxxx"), RoleSessionName: aws.String("agent"),
		Policy: aws.String(policy), DurationSeconds: aws.Int32(3600),
	})
	if err != nil {
		t.Fatalf("read-only credentials: %v", err)
	}
	c := out.Credentials
	ro := awss3.New(awss3.Options{
		Region: f.minio.Region, BaseEndpoint: aws.String(f.minio.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(*c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken),
	})
	_, err = ro.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String("catalogs/x/current"), Body: strings.NewReader("{}")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDenied" {
		t.Fatalf("a write with the read-only credentials: %v, want AccessDenied", err)
	}
	return []string{"AWS_ACCESS_KEY_ID=" + *c.AccessKeyId, "AWS_SECRET_ACCESS_KEY=" + *c.SecretAccessKey, "AWS_SESSION_TOKEN=" + *c.SessionToken}
}

// An agent with read-only bucket credentials starts, follows a publish
// and writes the status.
func TestAgentWithReadOnlyCredentials(t *testing.T) {
	f := startFleet(t, options{clusters: 1, agentsEach: 1, notify: true, readOnly: true, pollInterval: time.Hour})
	f.publishAndWait(t, 0)
}
