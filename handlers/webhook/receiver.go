package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// Config configures the webhook receivers.
type Config struct {
	// Receivers are the senders notifications are accepted from.
	Receivers []ReceiverConfig `json:"receivers,omitempty"`
	// HostAliases declare names of the same registry.
	HostAliases []HostAlias `json:"hostAliases,omitempty"`
	// MaxBodyBytes caps request bodies (default 1 MiB); larger ones get 413.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
}

// ReceiverConfig is one sender.
type ReceiverConfig struct {
	// Name identifies the receiver in logs and default paths: a DNS label.
	Name string `json:"name"`
	// Type is the sender's format: see Types.
	Type string `json:"type"`
	// Secret is the HMAC key (github, artifactory, generic, nexus), the
	// expected header value (distribution, gitlab, harbor, zot, acr,
	// acr-eventgrid, cdevents, ecr: an API key or "user:password")
	// or the token the path is derived from (dockerhub, quay).
	Secret string `json:"secret,omitempty"`
	// Header names the header holding the secret for header-authenticated
	// types (default Authorization).
	Header string `json:"header,omitempty"`
	// Path is where the receiver listens (default /hooks/<name>). Types
	// that cannot authenticate listen at /hooks/<hex sha256(secret+name)>
	// and take no Path.
	Path string `json:"path,omitempty"`
	// Host is the registry host the sender speaks for, used when its
	// payload names none (Docker Hub, Zot, Artifactory, generic, GitHub
	// without a package URL).
	Host string `json:"host,omitempty"`
	// Audience, Issuer and JWKS verify the signed tokens of gar receivers:
	// the expected audience, the issuer (default DefaultGARIssuer) and the
	// key set, a JWKS file or https URL. ServiceAccount must be the
	// token's verified email.
	Audience       string `json:"audience,omitempty"`
	Issuer         string `json:"issuer,omitempty"`
	JWKS           string `json:"jwks,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// JWKSAllowPlainHTTP accepts an http:// JWKS URL, whose keys anyone on
	// the path can replace (a test issuer, a sidecar on localhost).
	JWKSAllowPlainHTTP bool `json:"jwksAllowPlainHTTP,omitempty"`
	// AnyServiceAccount waives ServiceAccount: any token the issuer
	// signed for the audience is accepted.
	AnyServiceAccount bool `json:"anyServiceAccount,omitempty"`
	// Insecure accepts a receiver without a secret: anyone who can reach
	// the path can trigger syncs.
	Insecure bool `json:"insecure,omitempty"`
}

// DefaultMaxBodyBytes caps notification bodies: the largest real payloads
// (a Distribution envelope with references, a GitHub package event) are a
// few KiB.
const DefaultMaxBodyBytes = 1 << 20

// Endpoint is where a configured receiver listens. For dockerhub and quay
// receivers Path is a credential (Secret is true): show it only to whoever
// configures the sender, and route it as SecretRoute so that metrics and
// request logs name the placeholder, never the path.
type Endpoint struct {
	Name, Type, Path string
	Secret           bool
}

// SecretRoute is the route pattern that serves every path derived from a
// secret, and what metrics and logs show instead of such a path.
const SecretRoute = "/hooks/{token}" //nolint:gosec // G101: a route pattern, not a credential

type endpoint struct {
	cfg    ReceiverConfig
	src    Sender
	secret string
}

// Receiver is an http.Handler serving every configured receiver at its
// path. It authenticates, parses, maps pushes to catalogs, calls
// Triggerer.Trigger for each and answers 202 at once.
type Receiver struct {
	byPath  map[string]*endpoint
	order   []*endpoint
	lister  CatalogLister
	trig    Triggerer
	match   *Matcher
	maxBody int64
	seen    *Dedupe
	log     *slog.Logger
	outcome func(source, outcome string)
	notices *Notices
}

type options struct {
	log      *slog.Logger
	now      func() time.Time
	outcome  func(source, outcome string)
	dedupMax int
	dedupTTL time.Duration
}

// Option configures a Receiver.
type Option func(*options)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithDedupe sets how many delivery ids are remembered and for how long
// (default 4096 for an hour: senders redeliver within minutes).
func WithDedupe(max int, ttl time.Duration) Option {
	return func(o *options) { o.dedupMax, o.dedupTTL = max, ttl }
}

// WithClock sets the clock of token expiry and of the key set's refresh
// interval (time.Now otherwise).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Outcomes a Receiver reports for each notification through WithOutcome.
const (
	OutcomeTriggered    = "triggered"    // at least one catalog triggered
	OutcomeUnmatched    = "unmatched"    // authentic, about no configured catalog
	OutcomeIgnored      = "ignored"      // an event that is not a push (pull, delete, blob...)
	OutcomeDuplicate    = "duplicate"    // a redelivery already handled
	OutcomePing         = "ping"         // a sender's connectivity check
	OutcomeUnauthorized = "unauthorized" // no credentials (401)
	OutcomeForbidden    = "forbidden"    // wrong credentials or signature (403)
	OutcomeInvalid      = "invalid"      // a body or content type that does not parse (400, 415)
	OutcomeTooLarge     = "too_large"    // a body over the limit (413)
)

// WithOutcome calls fn with the receiver's type and the outcome of every
// notification that reached a receiver (for metrics).
func WithOutcome(fn func(source, outcome string)) Option { return func(o *options) { o.outcome = fn } }

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$`) })

// SecretPath returns the path of a receiver whose sender cannot
// authenticate: /hooks/ and the hex SHA-256 of secret followed by name,
// as Flux receivers do.
func SecretPath(secret, name string) string {
	sum := sha256.Sum256([]byte(secret + name))
	return "/hooks/" + hex.EncodeToString(sum[:])
}

// NewReceiver checks cfg and returns a Receiver that triggers trig for the
// catalogs lister returns.
func NewReceiver(cfg Config, lister CatalogLister, trig Triggerer, opts ...Option) (*Receiver, error) {
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now, dedupMax: 4096, dedupTTL: time.Hour}
	for _, fn := range opts {
		fn(&o)
	}
	if lister == nil || trig == nil {
		return nil, fmt.Errorf("%w: a catalog lister and a triggerer are required", ErrConfig)
	}
	m, err := NewMatcher(cfg.HostAliases)
	if err != nil {
		return nil, err
	}
	rc := &Receiver{
		byPath:  map[string]*endpoint{},
		lister:  lister,
		trig:    trig,
		match:   m,
		maxBody: cfg.MaxBodyBytes,
		seen:    NewDedupe(o.dedupMax, o.dedupTTL),
		log:     o.log,
		outcome: o.outcome,
		notices: NewNotices(0),
	}
	if rc.maxBody <= 0 {
		rc.maxBody = DefaultMaxBodyBytes
	}
	names := map[string]bool{}
	for i, c := range cfg.Receivers {
		ep, err := newEndpoint(c, o.now)
		if err != nil {
			return nil, fmt.Errorf("receivers[%d]: %w", i, err)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("%w: receivers[%d]: duplicate name %q", ErrConfig, i, c.Name)
		}
		names[c.Name] = true
		if _, dup := rc.byPath[ep.cfg.Path]; dup {
			return nil, fmt.Errorf("%w: receivers[%d] (%s): path %s is already used", ErrConfig, i, c.Name, ep.cfg.Path)
		}
		rc.byPath[ep.cfg.Path] = ep
		rc.order = append(rc.order, ep)
		if c.Insecure && c.Secret == "" {
			o.log.Warn("webhook receiver accepts unauthenticated requests", "receiver", c.Name, "type", c.Type)
		}
	}
	return rc, nil
}

func newEndpoint(c ReceiverConfig, now func() time.Time) (*endpoint, error) {
	if !nameRE().MatchString(c.Name) {
		return nil, fmt.Errorf("%w: name %q must be a DNS label (lower case letters, digits, '-')", ErrConfig, c.Name)
	}
	if c.Host != "" {
		c.Host = strings.ToLower(strings.TrimSpace(c.Host))
		if !hostRE().MatchString(c.Host) {
			return nil, fmt.Errorf("%w: %s: invalid host %q", ErrConfig, c.Name, c.Host)
		}
	}
	src, err := NewSender(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	if cs, ok := src.(clocked); ok {
		cs.setClock(now)
	}
	_, keyAuth := src.(keyAuthenticated)
	if c.Secret == "" && !c.Insecure && !keyAuth {
		return nil, fmt.Errorf("%w: %s: no secret; set one or mark the receiver insecure", ErrConfig, c.Name)
	}
	if _, pathSecret := src.(pathAuthenticated); pathSecret && c.Secret != "" {
		if c.Path != "" {
			return nil, fmt.Errorf("%w: %s: %s senders cannot authenticate, so the path is derived from the secret; remove path", ErrConfig, c.Name, c.Type)
		}
		c.Path = SecretPath(c.Secret, c.Name)
	}
	if c.Path == "" {
		c.Path = "/hooks/" + c.Name
	}
	if !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, "?# \t") {
		return nil, fmt.Errorf("%w: %s: path %q must be an absolute URL path", ErrConfig, c.Name, c.Path)
	}
	return &endpoint{cfg: c, src: src, secret: c.Secret}, nil
}

// Endpoints lists the configured receivers and their paths, in
// configuration order.
func (rc *Receiver) Endpoints() []Endpoint {
	out := make([]Endpoint, 0, len(rc.order))
	for _, ep := range rc.order {
		_, secret := ep.src.(pathAuthenticated)
		out = append(out, Endpoint{Name: ep.cfg.Name, Type: ep.cfg.Type, Path: ep.cfg.Path, Secret: secret && ep.secret != ""})
	}
	return out
}

// ServeHTTP handles one notification: method, body, authentication,
// parsing, redelivery check, then the triggers.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, ok := rc.byPath[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	n := &notification{rc: rc, ep: ep, log: rc.log.With("receiver", ep.cfg.Name, "type", ep.cfg.Type)}
	if !n.allowMethod(w, r) {
		return
	}
	body, ok := n.readAuthentic(w, r)
	if !ok {
		return
	}
	ids := n.deliveryIDs(r, body)
	pushes, ok := n.parse(w, r, body)
	if !ok {
		return
	}
	// Checked after parsing so a bad request does not burn its ids.
	if rc.seen.Seen(ids...) {
		n.log.Debug("webhook redelivery ignored", "ids", ids)
		n.report(OutcomeDuplicate)
		accepted(w, 0)
		return
	}
	n.trigger(w, r, pushes)
}

// notification is one request to one receiver, while it is handled.
type notification struct {
	rc  *Receiver
	ep  *endpoint
	log *slog.Logger
}

func (n *notification) report(outcome string) {
	if n.rc.outcome != nil {
		n.rc.outcome(n.ep.cfg.Type, outcome)
	}
}

// allowMethod answers a sender's handshake and anything but a POST,
// reporting whether the request goes on.
func (n *notification) allowMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodOptions {
		if hs, ok := n.ep.src.(Handshaker); ok {
			hs.Handshake(w, r)
			return false
		}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed: notifications are POSTed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// readAuthentic reads the body and authenticates the request, answering
// it when either fails.
func (n *notification) readAuthentic(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	ep := n.ep
	body, status, err := ReadBody(w, r, n.rc.maxBody)
	if err != nil {
		n.log.Debug("webhook body rejected", "status", status, "err", err)
		if status == http.StatusRequestEntityTooLarge {
			n.report(OutcomeTooLarge)
		} else {
			n.report(OutcomeInvalid)
		}
		http.Error(w, err.Error(), status)
		return nil, false
	}
	if _, keyAuth := ep.src.(keyAuthenticated); !keyAuth && ep.cfg.Insecure && ep.secret == "" {
		return body, true
	}
	if err := ep.src.Authenticate(r, body, ep.secret); err != nil {
		status, outcome := http.StatusForbidden, OutcomeForbidden
		if errors.Is(err, ErrUnauthenticated) {
			status, outcome = http.StatusUnauthorized, OutcomeUnauthorized
		}
		n.report(outcome)
		n.log.Warn("webhook authentication failed", "remote", r.RemoteAddr, "err", err)
		http.Error(w, http.StatusText(status), status)
		return nil, false
	}
	return body, true
}

// deliveryIDs returns the sender's delivery ids, scoped to the receiver.
func (n *notification) deliveryIDs(r *http.Request, body []byte) []string {
	idr, ok := n.ep.src.(Identified)
	if !ok {
		return nil
	}
	var ids []string
	for _, id := range idr.DeliveryIDs(r, body) {
		if id != "" {
			ids = append(ids, n.ep.cfg.Name+"/"+id)
		}
	}
	return ids
}

// parse returns the pushes a notification announces, answering pings,
// ignored events and bodies that do not parse itself.
func (n *notification) parse(w http.ResponseWriter, r *http.Request, body []byte) ([]Push, bool) {
	pushes, err := n.ep.src.Parse(r, body)
	switch {
	case err == nil:
		return pushes, true
	case errors.Is(err, ErrPing):
		n.log.Info("webhook ping")
		n.report(OutcomePing)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "pong\n") // a failed write means the sender left
	case errors.Is(err, ErrIgnored):
		n.rc.notices.Log(r.Context(), n.log, n.ep.cfg.Name+"/"+OutcomeIgnored, "webhook ignored", "reason", err)
		n.report(OutcomeIgnored)
		accepted(w, 0)
	case errors.Is(err, ErrUnsupportedMediaType):
		n.log.Debug("webhook rejected", "err", err)
		n.report(OutcomeInvalid)
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
	default:
		n.log.Debug("webhook rejected", "err", err)
		n.report(OutcomeInvalid)
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	return nil, false
}

// trigger dispatches the pushes and answers 202.
func (n *notification) trigger(w http.ResponseWriter, r *http.Request, pushes []Push) {
	rc := n.rc
	k := Dispatch(r.Context(), rc.match, rc.lister.Catalogs(), pushes, rc.trig, "webhook "+n.ep.cfg.Name, n.log)
	if k > 0 {
		n.report(OutcomeTriggered)
	} else {
		n.report(OutcomeUnmatched)
		rc.notices.Log(r.Context(), n.log, n.ep.cfg.Name+"/"+OutcomeUnmatched, "webhook matched no catalog", "pushes", describe(pushes))
	}
	accepted(w, k)
}

// Dispatch triggers every catalog that one of pushes may have changed, at
// most once each, and returns how many were triggered. via names the
// notification's origin in the trigger reason.
func Dispatch(ctx context.Context, m *Matcher, catalogs []catalogspec.Catalog, pushes []Push, trig Triggerer, via string, log *slog.Logger) int {
	// The engine outlives the request: keep its values, not its deadline.
	ctx = context.WithoutCancel(ctx)
	var done []string
	for _, p := range pushes {
		names := m.Match(catalogs, p)
		if len(names) == 0 {
			log.Debug("push matches no catalog", "push", p.String())
			continue
		}
		for _, name := range names {
			if slices.Contains(done, name) {
				continue
			}
			done = append(done, name)
			log.Info("sync triggered", "catalog", name, "push", p.String())
			trig.Trigger(ctx, name, via+": push "+p.String())
		}
	}
	return len(done)
}

// ReadBody reads a request body of at most max bytes. On failure the
// status says why: 413 for a larger body, 400 for a broken one.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, int, error) {
	if r.ContentLength > max {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the %d byte limit", r.ContentLength, max)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d byte limit", max)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	return body, 0, nil
}

func accepted(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "accepted: %d catalog(s) triggered\n", n)
}

// describe names the first few pushes, for a log line of bounded length.
func describe(pushes []Push) string {
	const most = 3
	var b strings.Builder
	for i, p := range pushes {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(pushes)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		s := p.String()
		if len(s) > 256 {
			s = s[:256] + "…"
		}
		b.WriteString(s)
	}
	return b.String()
}
