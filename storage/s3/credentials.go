package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// The credential sources, in the order credentialChain tries them (the
// SDK's order, less those dropped: SSO, credential_process, role
// profiles). The first whose variables are set is used even when it then
// fails, so a pod's broken role is reported, not hidden by a node's.
const (
	sourceSettings    = "the settings' static keys"
	sourceEnv         = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	sourceWebIdentity = "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN)"
	sourceFile        = "the shared credentials file"
	sourceContainer   = "the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_*)"
	sourceInstance    = "the EC2 instance role (IMDS)"
)

// maxCredentialBody bounds an answer of a credential endpoint (IMDS, the
// container agent, STS) and a token file: they are a few hundred bytes to
// a few kilobytes, and a broken or hostile one must not fill the memory.
const maxCredentialBody = 64 << 10

// errTooLarge is the error of a credential answer over maxCredentialBody.
var errTooLarge = errors.New("answer larger than 64 KiB")

// credentialChain picks the source of the credentials and says which.
// Only the choice is made here, from the settings, the variables and the
// shared credentials file: nothing goes over the network before the first
// request.
func credentialChain(cfg Config, region string, hc aws.HTTPClient) (string, aws.CredentialsProvider, error) {
	if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
		p, err := staticKeys(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken, sourceSettings)
		return sourceSettings, p, err
	}
	if k, s := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); k != "" || s != "" {
		p, err := staticKeys(k, s, os.Getenv("AWS_SESSION_TOKEN"), sourceEnv)
		return sourceEnv, p, err
	}
	if f := os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE"); f != "" {
		p, err := newWebIdentity(f, region, cappedClient{hc})
		return sourceWebIdentity, p, err
	}
	if p, err := sharedFile(); p != nil || err != nil {
		return sourceFile, p, err
	}
	full, rel := os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"), os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
	if full != "" || rel != "" {
		p, err := containerEndpoint(full, rel, hc)
		return sourceContainer, p, err
	}
	if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		return "", nil, fmt.Errorf("s3: no credentials: none in the settings, AWS_ACCESS_KEY_ID, "+
			"AWS_WEB_IDENTITY_TOKEN_FILE, the shared credentials file or AWS_CONTAINER_CREDENTIALS_*, "+
			"and AWS_EC2_METADATA_DISABLED turns off the instance role: %w", ErrBadCredentials)
	}
	client := imds.New(imds.Options{HTTPClient: cappedClient{hc}})
	return sourceInstance, ec2rolecreds.New(func(o *ec2rolecreds.Options) { o.Client = client }), nil
}

func staticKeys(key, secret, token, source string) (aws.CredentialsProvider, error) {
	if key == "" || secret == "" {
		return nil, fmt.Errorf("s3: %s: an access key needs its secret and a secret its key: %w", source, ErrConfig)
	}
	return credentials.NewStaticCredentialsProvider(key, secret, token), nil
}

// containerEndpoint is the ECS / EKS Pod Identity agent's endpoint. As
// the SDK, it takes the relative URI first, and plain HTTP only to a
// loopback address or the agents' own, where nothing can listen between.
func containerEndpoint(full, rel string, hc aws.HTTPClient) (aws.CredentialsProvider, error) {
	endpoint, what := full, "AWS_CONTAINER_CREDENTIALS_FULL_URI"
	if rel != "" {
		endpoint, what = "http://169.254.170.2"+rel, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("s3: %s is not an http(s) URL: %w", what, ErrConfig)
	}
	if u.Scheme == "http" && !agentHost(u.Hostname()) {
		return nil, fmt.Errorf("s3: %s: plain http only to a loopback address or the container agent's (169.254.170.2, 169.254.170.23, fd00:ec2::23), not %s: %w",
			what, u.Hostname(), ErrConfig)
	}
	return endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.HTTPClient = cappedClient{hc}
		if f := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); f != "" {
			// Read at each refresh: the EKS agent's token rotates.
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				return readToken(f, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
			})
		} else {
			o.AuthorizationToken = os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
		}
	}), nil
}

func agentHost(h string) bool {
	switch h {
	case "localhost", "169.254.170.2", "169.254.170.23", "fd00:ec2::23":
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// readToken reads a token file, which a sidecar or the kubelet rewrites.
func readToken(path, what string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // G703: a token file the operator or the kubelet names
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(&cappedBody{rc: f, left: maxCredentialBody})
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// checked names its source in every error, as ErrBadCredentials, and
// refuses credentials without a key or already expired, which the SDK
// would sign with and the service refuse less clearly. No error carries
// the secret: only the source's and the SDK's words.
type checked struct {
	source string
	p      aws.CredentialsProvider
}

func (c checked) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := c.p.Retrieve(ctx)
	switch {
	case err != nil:
		return aws.Credentials{}, fmt.Errorf("s3: credentials from %s: %w: %w", c.source, ErrBadCredentials, err)
	case creds.AccessKeyID == "" || creds.SecretAccessKey == "":
		return aws.Credentials{}, fmt.Errorf("s3: credentials from %s: no access key or secret in the answer: %w", c.source, ErrBadCredentials)
	case creds.CanExpire && !creds.Expires.After(time.Now()):
		return aws.Credentials{}, fmt.Errorf("s3: credentials from %s: expired at %s: %w",
			c.source, creds.Expires.UTC().Format(time.RFC3339), ErrBadCredentials)
	}
	return creds, nil
}

// HandleFailToRefresh keeps the instance role's answer to a failed
// refresh: stale credentials a while longer while IMDS is unreachable.
func (c checked) HandleFailToRefresh(ctx context.Context, prev aws.Credentials, err error) (aws.Credentials, error) {
	if h, ok := c.p.(aws.HandleFailRefreshCredentialsCacheStrategy); ok {
		return h.HandleFailToRefresh(ctx, prev, err)
	}
	return aws.Credentials{}, err
}

// cappedClient bounds every answer's body to maxCredentialBody.
type cappedClient struct{ next aws.HTTPClient }

func (c cappedClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &cappedBody{rc: resp.Body, left: maxCredentialBody}
	}
	return resp, err
}

// cappedBody reads up to left bytes, then fails with errTooLarge if more
// follow.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
