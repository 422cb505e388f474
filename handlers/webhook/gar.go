package webhook

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/regclient/regclient/types/ref"
)

// gar reads Google Artifact Registry notifications delivered by a Pub/Sub
// push subscription on the gcr topic. Pub/Sub signs each push with an
// OIDC token of the subscription's service account (Authorization:
// Bearer); the token's issuer, audience, expiry and then signature are
// checked against a configured JWKS (a file, re-read when it changes, or
// an https URL, cached and fetched again for unknown key ids at most once
// per DefaultJWKSRefreshInterval), and its email against the service
// account.
type gar struct {
	verifier *oidc.IDTokenVerifier
	issuer   string
	audience string
	email    string
	host     string
	now      func() time.Time
	err      error
}

// DefaultGARIssuer is the issuer of Pub/Sub push tokens.
const DefaultGARIssuer = "https://accounts.google.com"

// clocked is a Sender whose checks read the time.
type clocked interface{ setClock(now func() time.Time) }

func newGAR(c ReceiverConfig) *gar {
	g := &gar{email: c.ServiceAccount, host: c.Host, audience: c.Audience, issuer: c.Issuer, now: time.Now}
	if g.issuer == "" {
		g.issuer = DefaultGARIssuer
	}
	g.verifier, g.err = g.newVerifier(c)
	return g
}

func (g *gar) setClock(now func() time.Time) { g.now = now }

// garVerifier builds the token verifier of a gar receiver's configuration.
func garVerifier(c ReceiverConfig) (*oidc.IDTokenVerifier, error) {
	return (&gar{now: time.Now}).newVerifier(c)
}

// newVerifier builds the token verifier of a gar receiver's configuration,
// which reads the time from g.now.
func (g *gar) newVerifier(c ReceiverConfig) (*oidc.IDTokenVerifier, error) {
	if c.Audience == "" {
		return nil, fmt.Errorf("%w: %s: gar receivers need audience (the push subscription's OIDC audience)", ErrConfig, c.Name)
	}
	if c.ServiceAccount == "" && !c.AnyServiceAccount {
		return nil, fmt.Errorf("%w: %s: gar receivers need serviceAccount (the push subscription's service account email); "+
			"without it any token the issuer signed for the audience is accepted: set anyServiceAccount: true to allow that", ErrConfig, c.Name)
	}
	algs := make([]string, len(garAlgs))
	for i, a := range garAlgs {
		algs[i] = string(a)
	}
	var ks oidc.KeySet
	switch {
	case c.JWKS == "":
		return nil, fmt.Errorf("%w: %s: gar receivers need jwks (a JWKS file or https URL)", ErrConfig, c.Name)
	case strings.HasPrefix(c.JWKS, "http://") && !c.JWKSAllowPlainHTTP:
		return nil, fmt.Errorf("%w: %s: jwks %s is plain HTTP, whose keys anyone on the path can replace: "+
			"use https, or set jwksAllowPlainHTTP: true", ErrConfig, c.Name, c.JWKS)
	case strings.HasPrefix(c.JWKS, "https://") || strings.HasPrefix(c.JWKS, "http://"):
		if _, err := url.Parse(c.JWKS); err != nil {
			return nil, fmt.Errorf("%w: %s: jwks: %v", ErrConfig, c.Name, err)
		}
		ks = &remoteKeySet{url: c.JWKS, client: &http.Client{Timeout: 10 * time.Second},
			algs: garAlgs, interval: DefaultJWKSRefreshInterval,
			now: func() time.Time { return g.now() }}
	default:
		fks := &fileKeySet{path: c.JWKS}
		if _, err := fks.keys(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, c.Name, err)
		}
		ks = fks
	}
	iss := c.Issuer
	if iss == "" {
		iss = DefaultGARIssuer
	}
	cfg := &oidc.Config{ClientID: c.Audience, SupportedSigningAlgs: algs, Now: func() time.Time { return g.now() }}
	return oidc.NewVerifier(iss, ks, cfg), nil
}

func (g *gar) Type() string { return TypeGAR }

func (g *gar) validate() error { return g.err }

// keyAuthenticated: the credential is the configured key set, not a secret.
func (g *gar) keyAuthenticated() {}

func (g *gar) Authenticate(r *http.Request, _ []byte, _ string) error {
	v := r.Header.Get("Authorization")
	if v == "" {
		return fmt.Errorf("%w: no Authorization header", ErrUnauthenticated)
	}
	if len(v) < 8 || !strings.EqualFold(v[:7], "bearer ") {
		return fmt.Errorf("%w: Authorization is not a bearer token", ErrForbidden)
	}
	raw := strings.TrimSpace(v[7:])
	if err := g.precheck(raw); err != nil {
		return fmt.Errorf("%w: push token: %v", ErrForbidden, err)
	}
	tok, err := g.verifier.Verify(r.Context(), raw)
	if err != nil {
		// The reason (expired, audience, issuer, signature) says nothing secret.
		return fmt.Errorf("%w: push token: %v", ErrForbidden, err)
	}
	if g.email != "" { // else waived by anyServiceAccount
		var cl struct {
			Email         string `json:"email"`
			EmailVerified bool   `json:"email_verified"`
		}
		if err := tok.Claims(&cl); err != nil || !cl.EmailVerified || !equalSecret(cl.Email, g.email) {
			return fmt.Errorf("%w: push token is not the configured service account's", ErrForbidden)
		}
	}
	return nil
}

// garAlgs are the signature algorithms of push tokens.
var garAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}

// precheck refuses, before any key is looked up (which may fetch the key
// set), a token whose form, algorithm, issuer, audience or expiry cannot
// pass. The verifier checks them all again, after the signature.
func (g *gar) precheck(raw string) error {
	jws, err := jose.ParseSignedCompact(raw, garAlgs)
	if err != nil {
		return fmt.Errorf("malformed token: %w", err)
	}
	var cl struct {
		Issuer   string          `json:"iss"`
		Audience json.RawMessage `json:"aud"`
		Expiry   *float64        `json:"exp"`
	}
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &cl); err != nil {
		return fmt.Errorf("malformed token claims: %w", err)
	}
	// Google writes its issuer with or without the scheme.
	if cl.Issuer != g.issuer && (g.issuer != DefaultGARIssuer || cl.Issuer != "accounts.google.com") {
		return fmt.Errorf("issued by %.64q, want %q", cl.Issuer, g.issuer)
	}
	var auds []string
	if json.Unmarshal(cl.Audience, &auds) != nil {
		var one string
		if json.Unmarshal(cl.Audience, &one) == nil {
			auds = []string{one}
		}
	}
	if !slices.Contains(auds, g.audience) {
		return fmt.Errorf("not for audience %q", g.audience)
	}
	if cl.Expiry == nil || time.Unix(int64(*cl.Expiry), 0).Before(g.now()) {
		return errors.New("expired or without expiry")
	}
	return nil
}

// pubsubPush is the body of a Pub/Sub push request.
type pubsubPush struct {
	Message *struct {
		Data       []byte            `json:"data"`
		Attributes map[string]string `json:"attributes"`
		MessageID  string            `json:"messageId"`
		MessageID2 string            `json:"message_id"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

func (g *gar) DeliveryIDs(_ *http.Request, body []byte) []string {
	var p pubsubPush
	if json.Unmarshal(body, &p) != nil || p.Message == nil {
		return nil
	}
	id := p.Message.MessageID
	if id == "" {
		id = p.Message.MessageID2
	}
	if id == "" {
		return nil
	}
	// Message ids are unique per topic; a subscription reads one topic.
	return []string{p.Subscription + "#" + id}
}

func (g *gar) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, "application/json"); err != nil {
		return nil, err
	}
	var p pubsubPush
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, malformed("invalid Pub/Sub push: %v", err)
	}
	if p.Message == nil || len(p.Message.Data) == 0 {
		return nil, malformed("no message.data")
	}
	var d struct {
		Action string `json:"action"`
		Digest string `json:"digest"`
		Tag    string `json:"tag"`
	}
	if err := json.Unmarshal(p.Message.Data, &d); err != nil {
		return nil, malformed("message.data is not an Artifact Registry notification: %v", err)
	}
	if d.Action == "" {
		return nil, malformed(`no "action" in message.data`)
	}
	if d.Action != "INSERT" {
		return nil, ignored("action %s", d.Action)
	}
	return garPush(d.Digest, d.Tag)
}

// garPush reads the image names of an INSERT: "digest" is
// host/repo@sha256:…, "tag" (absent for untagged pushes) host/repo:tag.
func garPush(digestName, tagName string) ([]Push, error) {
	var p Push
	for _, name := range []string{digestName, tagName} {
		if name == "" {
			continue
		}
		rf, err := ref.New(name)
		if err != nil || rf.Scheme != "reg" {
			return nil, malformed("invalid image name %q", name)
		}
		if p.Repository != "" && (rf.Registry != p.Host || rf.Repository != p.Repository) {
			return nil, malformed("digest %q and tag %q name different images", digestName, tagName)
		}
		p.Host, p.Repository = rf.Registry, rf.Repository
		if rf.Digest != "" {
			p.Digest = rf.Digest
		}
		if name == tagName && rf.Digest == "" {
			p.Tag = rf.Tag
		}
	}
	if p.Repository == "" {
		return nil, malformed("INSERT names no image")
	}
	return normalizeAll([]Push{p})
}

// fileKeySet verifies with the keys of a JWKS file, re-read when its size
// or modification time changes (a Secret volume updated in place).
type fileKeySet struct {
	path string
	mu   sync.Mutex
	mod  time.Time
	size int64
	pubs []crypto.PublicKey
}

func (f *fileKeySet) keys() ([]crypto.PublicKey, error) {
	st, err := os.Stat(f.path)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pubs != nil && st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.pubs, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jwks %s: %v", f.path, err)
	}
	var pubs []crypto.PublicKey
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			pubs = append(pubs, k.Key)
		}
	}
	if len(pubs) == 0 {
		return nil, fmt.Errorf("jwks %s: no public signing keys", f.path)
	}
	f.pubs, f.mod, f.size = pubs, st.ModTime(), st.Size()
	return pubs, nil
}

func (f *fileKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	pubs, err := f.keys()
	if err != nil {
		return nil, err
	}
	return (&oidc.StaticKeySet{PublicKeys: pubs}).VerifySignature(ctx, jwt)
}
