package s3

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// webIdentity trades the token of AWS_WEB_IDENTITY_TOKEN_FILE (IRSA's,
// a kubelet-projected service account token) for the role AWS_ROLE_ARN's
// credentials with STS AssumeRoleWithWebIdentity, an unsigned form POST.
// It is written here because the SDK's STS client would link 12 packages
// and allocate 165 KB (its endpoint rules and schemas) at every start for
// this one call.
type webIdentity struct {
	endpoint, roleARN, roleSessionName, tokenFile string
	client                                        aws.HTTPClient
}

func newWebIdentity(tokenFile, region string, hc aws.HTTPClient) (*webIdentity, error) {
	w := &webIdentity{
		endpoint: os.Getenv("AWS_ENDPOINT_URL_STS"), roleARN: os.Getenv("AWS_ROLE_ARN"),
		roleSessionName: os.Getenv("AWS_ROLE_SESSION_NAME"), tokenFile: tokenFile, client: hc,
	}
	if w.roleARN == "" {
		return nil, fmt.Errorf("s3: AWS_WEB_IDENTITY_TOKEN_FILE is set but not AWS_ROLE_ARN: %w", ErrConfig)
	}
	if w.roleSessionName == "" {
		w.roleSessionName = "catalogsync-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	if w.endpoint == "" {
		w.endpoint = stsEndpoint(region)
	}
	if u, err := url.Parse(w.endpoint); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("s3: AWS_ENDPOINT_URL_STS is not an http(s) URL: %w", ErrConfig)
	}
	return w, nil
}

// stsEndpoint is region's STS endpoint, as the SDK's rules give it for the
// partitions other than the isolated ones.
func stsEndpoint(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "https://sts." + region + ".amazonaws.com.cn"
	}
	return "https://sts." + region + ".amazonaws.com"
}

// stsCredentials is the part of AssumeRoleWithWebIdentity's answer used.
type stsCredentials struct {
	AccessKeyID     string    `xml:"AssumeRoleWithWebIdentityResult>Credentials>AccessKeyId"`
	SecretAccessKey string    `xml:"AssumeRoleWithWebIdentityResult>Credentials>SecretAccessKey"`
	SessionToken    string    `xml:"AssumeRoleWithWebIdentityResult>Credentials>SessionToken"`
	Expiration      time.Time `xml:"AssumeRoleWithWebIdentityResult>Credentials>Expiration"`
}

// stsError is STS's error answer.
type stsError struct {
	Code    string `xml:"Error>Code"`
	Message string `xml:"Error>Message"`
}

// Retrieve implements aws.CredentialsProvider. The token is read at each
// call: the kubelet rotates it.
func (w *webIdentity) Retrieve(ctx context.Context) (aws.Credentials, error) {
	token, err := readToken(w.tokenFile, "AWS_WEB_IDENTITY_TOKEN_FILE")
	if err != nil {
		return aws.Credentials{}, err
	}
	form := url.Values{
		"Action": {"AssumeRoleWithWebIdentity"}, "Version": {"2011-06-15"},
		"RoleArn": {w.roleARN}, "RoleSessionName": {w.roleSessionName}, "WebIdentityToken": {token},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return aws.Credentials{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	resp, err := w.client.Do(req)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("AssumeRoleWithWebIdentity: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("AssumeRoleWithWebIdentity: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e stsError
		_ = xml.Unmarshal(body, &e)
		return aws.Credentials{}, fmt.Errorf("AssumeRoleWithWebIdentity: STS answered %s: %s",
			resp.Status, truncate.Text(strings.TrimSpace(e.Code+" "+e.Message), 512))
	}
	var c stsCredentials
	if err := xml.Unmarshal(body, &c); err != nil {
		return aws.Credentials{}, fmt.Errorf("AssumeRoleWithWebIdentity: the answer is not STS's XML: %w", err)
	}
	return aws.Credentials{
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
		Source: "AssumeRoleWithWebIdentity", CanExpire: !c.Expiration.IsZero(), Expires: c.Expiration,
	}, nil
}
