// Package tokenreview verifies Kubernetes service-account tokens for one
// audience with the TokenReview API (authentication.k8s.io/v1), as
// Knative Eventing's OIDC senders present them. Results are cached for a
// short time in a bounded LRU keyed by the token's SHA-256, so a sender
// that delivers many events costs one review per TTL; the token itself is
// never kept, logged or returned.
package tokenreview

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

const (
	// DefaultTTL is how long a review's answer is reused.
	DefaultTTL = 30 * time.Second
	// DefaultCacheSize bounds the cached answers (about 100 bytes each).
	DefaultCacheSize = 4096
	// maxTokenBytes bounds what is sent for review: projected
	// service-account tokens are about 1 KiB.
	maxTokenBytes = 16 << 10
	// reviewTimeout bounds one TokenReview call.
	reviewTimeout = 5 * time.Second
)

// ErrRejected wraps webhook.ErrForbidden: the token is not a valid token
// for the audience.
var ErrRejected = fmt.Errorf("%w: token rejected", webhook.ErrForbidden)

// ErrBusy means more reviews were asked for than the rate limit allows;
// the sender should retry.
var ErrBusy = errors.New("token review: too many reviews, retry later")

// Client creates TokenReviews: client-go's typed authentication client
// is one, NewClient another.
type Client interface {
	Create(ctx context.Context, tr *authv1.TokenReview, opts metav1.CreateOptions) (*authv1.TokenReview, error)
}

// Reviewer verifies tokens for one audience. Create it with New; it is
// safe for concurrent use.
type Reviewer struct {
	client   Client
	audience string
	cache    *expirable.LRU[[sha256.Size]byte, result]
	limit    *rate.Limiter
}

type result struct {
	user string
	ok   bool
	// exp is the token's own expiry (unverified, from its claims): a
	// cached acceptance never outlives the token.
	exp time.Time
}

// Option configures a Reviewer.
type Option func(*options)

type options struct {
	ttl   time.Duration
	size  int
	limit rate.Limit
	burst int
}

// WithCache sets how long answers are reused and how many are kept.
func WithCache(ttl time.Duration, size int) Option {
	return func(o *options) { o.ttl, o.size = ttl, size }
}

// WithRateLimit bounds the reviews sent to the apiserver (default 20/s,
// burst 50): a flood of distinct forged tokens is answered 503, not
// forwarded.
func WithRateLimit(r rate.Limit, burst int) Option {
	return func(o *options) { o.limit, o.burst = r, burst }
}

// New returns a Reviewer that asks client about tokens for audience.
func New(client Client, audience string, opts ...Option) (*Reviewer, error) {
	o := options{ttl: DefaultTTL, size: DefaultCacheSize, limit: 20, burst: 50}
	for _, fn := range opts {
		fn(&o)
	}
	if audience == "" {
		return nil, errors.New("token review: an audience is required")
	}
	return &Reviewer{
		client: client, audience: audience,
		cache: expirable.NewLRU[[sha256.Size]byte, result](o.size, nil, o.ttl),
		limit: rate.NewLimiter(o.limit, o.burst),
	}, nil
}

// NewForConfig returns a Reviewer using the cluster cfg points at.
func NewForConfig(cfg *rest.Config, audience string, opts ...Option) (*Reviewer, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return New(c, audience, opts...)
}

// NewClient returns a Client of the cluster cfg points at. It goes
// through the dynamic client: the typed one registers every API group of
// client-go's clientset at start.
func NewClient(cfg *rest.Config) (Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return dynamicClient{dyn.Resource(authv1.SchemeGroupVersion.WithResource("tokenreviews"))}, nil
}

type dynamicClient struct{ res dynamic.ResourceInterface }

func (c dynamicClient) Create(ctx context.Context, tr *authv1.TokenReview, opts metav1.CreateOptions) (*authv1.TokenReview, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tr)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(authv1.SchemeGroupVersion.String())
	u.SetKind("TokenReview")
	if u, err = c.res.Create(ctx, u, opts); err != nil {
		return nil, err
	}
	out := &authv1.TokenReview{}
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// Review returns the name of the user token authenticates for the
// audience, or an error wrapping ErrRejected.
func (r *Reviewer) Review(ctx context.Context, token string) (string, error) {
	exp, ok := parseJWT(token)
	if !ok {
		return "", fmt.Errorf("%w: not a JWT", ErrRejected)
	}
	key := sha256.Sum256([]byte(token))
	if res, ok := r.cache.Get(key); ok && (res.exp.IsZero() || time.Now().Before(res.exp)) {
		return res.answer()
	}
	if !r.limit.Allow() {
		return "", ErrBusy
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := r.client.Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{r.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token review: %w", err)
	}
	res := result{user: tr.Status.User.Username, exp: exp}
	// An apiserver that does not support audiences answers without them:
	// that is not a token for ours.
	res.ok = tr.Status.Authenticated && slices.Contains(tr.Status.Audiences, r.audience)
	r.cache.Add(key, res)
	return res.answer()
}

func (res result) answer() (string, error) {
	if !res.ok {
		return "", ErrRejected
	}
	return res.user, nil
}

// parseJWT rejects, without asking the apiserver, what cannot be a token
// (too long, not three base64url parts, claims that are not JSON) and
// returns the unverified expiry claim, zero when there is none.
func parseJWT(t string) (time.Time, bool) {
	if len(t) > maxTokenBytes {
		return time.Time{}, false
	}
	parts := strings.Split(t, ".")
	if len(parts) != 3 || parts[0] == "" {
		return time.Time{}, false
	}
	if _, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, false
	}
	if claims.Exp == 0 {
		return time.Time{}, true
	}
	return time.Unix(claims.Exp, 0), true
}
