package webhook

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ecr reads Amazon ECR "ECR Image Action" events forwarded by an
// EventBridge rule to an API destination. The destination's connection
// sends an API key in a header of its choice or basic auth; both are
// compared with the secret in constant time ("user:password" for basic).
// The event id names the delivery: EventBridge retries keep it.
type ecr struct {
	header string
	host   string
}

func newECR(c ReceiverConfig) *ecr { return &ecr{header: newHeaderAuth(c).header, host: c.Host} }

func (e *ecr) Type() string { return TypeECR }

func (e *ecr) Authenticate(r *http.Request, _ []byte, secret string) error {
	v := r.Header.Get(e.header)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, e.header)
	}
	// Every form is compared, so timing does not say which one failed.
	ok := equalSecret(v, secret)
	if len(v) > 6 && strings.EqualFold(v[:6], "basic ") {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[6:]))
		ok = equalSecret(string(dec), secret) && err == nil || ok
	}
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		ok = equalSecret(strings.TrimSpace(v[7:]), secret) || ok
	}
	if !ok {
		return fmt.Errorf("%w: %s header does not match", ErrForbidden, e.header)
	}
	return nil
}

type ecrEvent struct {
	ID         string `json:"id"`
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Account    string `json:"account"`
	Region     string `json:"region"`
	Detail     *struct {
		Result     string `json:"result"`
		Repository string `json:"repository-name"`
		Digest     string `json:"image-digest"`
		ActionType string `json:"action-type"`
		Tag        string `json:"image-tag"`
		MediaType  string `json:"manifest-media-type"`
	} `json:"detail"`
}

func (e *ecr) DeliveryIDs(_ *http.Request, body []byte) []string {
	var ev ecrEvent
	if json.Unmarshal(body, &ev) != nil || ev.ID == "" {
		return nil
	}
	return []string{ev.ID}
}

func (e *ecr) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var ev ecrEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, malformed("invalid JSON: %v", err)
	}
	if ev.DetailType == "" || ev.Source == "" {
		return nil, malformed(`want "detail-type" and "source"`)
	}
	if ev.Source != "aws.ecr" || ev.DetailType != "ECR Image Action" {
		return nil, ignored("%s event %q", ev.Source, ev.DetailType)
	}
	d := ev.Detail
	if d == nil || d.ActionType == "" {
		return nil, malformed("no detail.action-type")
	}
	if d.ActionType != "PUSH" || d.Result != "SUCCESS" {
		return nil, ignored("action %s, result %s", d.ActionType, d.Result)
	}
	if d.Repository == "" {
		return nil, malformed("no detail.repository-name")
	}
	// The event names the account and region, not the registry host:
	// the receiver's host applies, or only the repository is compared.
	return normalizeAll([]Push{{Host: e.host, Repository: d.Repository, Tag: d.Tag, Digest: d.Digest, MediaType: d.MediaType}})
}
