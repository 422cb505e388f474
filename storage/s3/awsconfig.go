package s3

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/logging"

	"github.com/catalogsync/catalogsync/internal/stall"
)

// awsConfig builds the SDK's configuration from cfg and the environment
// without the SDK's config package, which links SSO, SSO-OIDC, sign-in,
// STS and an ini parser (45 packages, 0.56 MB of allocations at every
// start) for sources a server does not use. The variables read: the
// region's (AWS_REGION, AWS_DEFAULT_REGION), AWS_CA_BUNDLE, and the
// credential chain's (credentials.go).
func awsConfig(cfg Config) (aws.Config, error) {
	region := cfg.Region
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if region == "" {
			region = os.Getenv(v)
		}
	}
	if region == "" {
		if cfg.Endpoint == "" {
			return aws.Config{}, fmt.Errorf("s3: no region (set it, or AWS_REGION): %w", ErrConfig)
		}
		// S3-compatible services mostly ignore the region but the
		// signature needs one; us-east-1 is what they default to.
		region = "us-east-1"
	}
	hc, err := httpClient(cfg.HTTPClient)
	if err != nil {
		return aws.Config{}, err
	}
	// A credential endpoint that hangs fails as a silent store does.
	source, creds, err := credentialChain(cfg, region, stall.Client(hc, cfg.stallTimeout()))
	if err != nil {
		return aws.Config{}, err
	}
	return aws.Config{
		Region:           region,
		Credentials:      aws.NewCredentialsCache(checked{source: source, p: creds}),
		HTTPClient:       hc,
		RetryMaxAttempts: cfg.MaxAttempts,
		// The SDK logs at debug level through this (e.g. for every
		// ranged Get, whose response carries no checksum); errors reach
		// callers.
		Logger: logging.Nop{},
	}, nil
}

// httpClient is c, else the SDK's default client trusting only the
// certificates of AWS_CA_BUNDLE when it is set, as the SDK's config did.
func httpClient(c *http.Client) (aws.HTTPClient, error) {
	if c != nil {
		return c, nil
	}
	client := awshttp.NewBuildableClient()
	path := os.Getenv("AWS_CA_BUNDLE")
	if path == "" {
		return client, nil
	}
	pem, err := os.ReadFile(path) //nolint:gosec // G703: the operator's AWS_CA_BUNDLE
	if err != nil {
		return nil, fmt.Errorf("s3: AWS_CA_BUNDLE: %w: %w", ErrConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3: AWS_CA_BUNDLE %s holds no PEM certificate: %w", path, ErrConfig)
	}
	return client.WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}
