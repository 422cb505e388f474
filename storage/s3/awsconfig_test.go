package s3

import (
	"errors"
	"strings"
	"testing"
)

// The region is the setting's, else AWS_REGION's, else
// AWS_DEFAULT_REGION's, else us-east-1 for an S3-compatible endpoint;
// with none of them AWS itself cannot be reached.
func TestAWSConfigRegionOrder(t *testing.T) {
	cases := []struct {
		name, setting, env, defaultEnv, endpoint, want string
	}{
		{"setting", "eu-west-3", "us-west-2", "ap-south-1", "", "eu-west-3"},
		{"AWS_REGION", "", "us-west-2", "ap-south-1", "", "us-west-2"},
		{"AWS_DEFAULT_REGION", "", "", "ap-south-1", "", "ap-south-1"},
		{"endpoint", "", "", "", "http://127.0.0.1:9000", "us-east-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolateSDKEnv(t)
			t.Setenv("AWS_REGION", tc.env)
			t.Setenv("AWS_DEFAULT_REGION", tc.defaultEnv)
			cfg := Config{Region: tc.setting, Endpoint: tc.endpoint, AccessKeyID: "k", SecretAccessKey: "s"}
			got, err := awsConfig(cfg)
			if err != nil || got.Region != tc.want {
				t.Fatalf("awsConfig: region %q, %v; want %q", got.Region, err, tc.want)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		isolateSDKEnv(t)
		_, err := awsConfig(Config{AccessKeyID: "k", SecretAccessKey: "s"})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "AWS_REGION") {
			t.Fatalf("awsConfig = %v, want ErrConfig naming AWS_REGION", err)
		}
	})
}

// AWS_CA_BUNDLE naming a file without a certificate stops the start
// rather than leaving the system's roots trusted.
func TestAWSConfigRefusesEmptyCABundle(t *testing.T) {
	isolateSDKEnv(t)
	t.Setenv("AWS_CA_BUNDLE", writeFile(t, "ca.pem", "not a certificate\n"))
	_, err := awsConfig(Config{Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "AWS_CA_BUNDLE") {
		t.Fatalf("awsConfig = %v, want ErrConfig naming AWS_CA_BUNDLE", err)
	}
}
