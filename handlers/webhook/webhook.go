// Package webhook receives registry notifications and turns them into sync
// triggers. A notification never decides what is pulled: it only names a
// repository. Every configured catalog whose image lives in that repository
// is triggered, and the sync engine then resolves the catalog's own
// reference as it always does, so a forged or stale notification can at
// worst cost one manifest HEAD.
//
// Each sender has a Sender that authenticates its requests and reads its
// payload format; a Receiver serves them all as one http.Handler.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"sync"

	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// Push is what a registry says was pushed. A webhook never decides what is
// pulled: it only names a repository.
type Push struct {
	// Host is the registry as the sender names it (host[:port]); empty when
	// the sender does not say, and then only the repository is compared.
	Host string
	// Repository is the repository path, e.g. "acme/operator-catalog".
	Repository string
	// Tag is empty for a push by digest.
	Tag string
	// Digest is empty when the sender does not report it.
	Digest string
	// MediaType of the pushed manifest, when reported.
	MediaType string
}

// String formats the push as an image reference: host/repo:tag@digest.
func (p Push) String() string {
	s := p.Repository
	if p.Host != "" {
		s = p.Host + "/" + s
	}
	if p.Tag != "" {
		s += ":" + p.Tag
	}
	if p.Digest != "" {
		s += "@" + p.Digest
	}
	return s
}

// Triggerer is implemented by the sync engine. Trigger must return fast:
// the engine queues the sync and coalesces repeated triggers. ctx carries
// the request's values but is never cancelled, so queued work may keep it.
type Triggerer interface {
	Trigger(ctx context.Context, catalog, reason string)
}

// CatalogLister returns the current set of catalogs (static configuration
// today, the cluster's ClusterCatalogs later). It is called on every
// notification and must be cheap and safe for concurrent use.
type CatalogLister interface {
	Catalogs() []catalogspec.Catalog
}

// Sender reads one sender's notifications.
type Sender interface {
	// Type is the receiver type in configuration, e.g. "harbor".
	Type() string
	// Authenticate checks that the request comes from the holder of
	// secret. It returns an error wrapping ErrUnauthenticated when the
	// request carries no credentials and ErrForbidden when they are wrong.
	Authenticate(r *http.Request, body []byte, secret string) error
	// Parse returns the pushes the request announces. Events that announce
	// no manifest push (pulls, deletes, blob uploads, other event types)
	// are left out; when nothing is left the error wraps ErrIgnored.
	// Other errors wrap ErrMalformed, ErrUnsupportedMediaType or ErrPing.
	Parse(r *http.Request, body []byte) ([]Push, error)
}

// Identified is implemented by sources whose requests name their
// deliveries (GitHub's X-GitHub-Delivery, CloudEvent ids, Distribution
// event ids), so redeliveries can be dropped.
type Identified interface {
	DeliveryIDs(r *http.Request, body []byte) []string
}

// Handshaker is implemented by sources whose sender validates the endpoint
// with an OPTIONS request before delivering (CloudEvents abuse protection).
type Handshaker interface {
	Handshake(w http.ResponseWriter, r *http.Request)
}

// pathAuthenticated marks sources whose sender can neither sign nor send a
// header: the receiver's unguessable path is the credential.
type pathAuthenticated interface {
	pathIsSecret()
}

var (
	// ErrUnauthenticated means the request carries no credentials (401).
	ErrUnauthenticated = errors.New("missing credentials")
	// ErrForbidden means the credentials or signature are wrong (403).
	ErrForbidden = errors.New("invalid credentials")
	// ErrMalformed means the payload cannot be read (400).
	ErrMalformed = errors.New("malformed notification")
	// ErrUnsupportedMediaType means the content type is not the sender's (415).
	ErrUnsupportedMediaType = errors.New("unsupported content type")
	// ErrIgnored is a valid notification that announces no push (202).
	ErrIgnored = errors.New("notification ignored")
	// ErrPing is a sender's connectivity test, answered 200.
	ErrPing = errors.New("ping")
	// ErrConfig means the receiver configuration is invalid.
	ErrConfig = errors.New("invalid webhook configuration")
)

// Receiver types.
const (
	TypeDistribution = "distribution"
	TypeGitLab       = "gitlab"
	TypeHarbor       = "harbor"
	TypeQuay         = "quay"
	TypeDockerHub    = "dockerhub"
	TypeGitHub       = "github"
	TypeZot          = "zot"
	TypeACR          = "acr"
	TypeEventGrid    = "acr-eventgrid"
	TypeArtifactory  = "artifactory"
	TypeGeneric      = "generic"
	TypeGAR          = "gar"
	TypeNexus        = "nexus"
	TypeECR          = "ecr"
	TypeCDEvents     = "cdevents"
)

// senderFactories builds a Sender for a receiver's configuration.
var senderFactories = map[string]func(ReceiverConfig) Sender{
	TypeDistribution: func(c ReceiverConfig) Sender { return newDistribution(c) },
	TypeGitLab:       func(c ReceiverConfig) Sender { return newGitLab(c) },
	TypeHarbor:       func(c ReceiverConfig) Sender { return newHarbor(c) },
	TypeQuay:         func(c ReceiverConfig) Sender { return newQuay(c) },
	TypeDockerHub:    func(c ReceiverConfig) Sender { return newDockerHub(c) },
	TypeGitHub:       func(c ReceiverConfig) Sender { return newGitHub(c) },
	TypeZot:          func(c ReceiverConfig) Sender { return newZot(c) },
	TypeACR:          func(c ReceiverConfig) Sender { return newACR(c) },
	TypeEventGrid:    func(c ReceiverConfig) Sender { return newEventGrid(c) },
	TypeArtifactory:  func(c ReceiverConfig) Sender { return newArtifactory(c) },
	TypeGeneric:      func(c ReceiverConfig) Sender { return newGeneric(c) },
	TypeGAR:          func(c ReceiverConfig) Sender { return newGAR(c) },
	TypeNexus:        func(c ReceiverConfig) Sender { return newNexus(c) },
	TypeECR:          func(c ReceiverConfig) Sender { return newECR(c) },
	TypeCDEvents:     func(c ReceiverConfig) Sender { return newCDEvents(c) },
}

// Types lists the receiver types, sorted.
func Types() []string {
	return []string{TypeACR, TypeEventGrid, TypeArtifactory, TypeCDEvents, TypeDistribution, TypeDockerHub,
		TypeECR, TypeGAR, TypeGeneric, TypeGitHub, TypeGitLab, TypeHarbor, TypeNexus, TypeQuay, TypeZot}
}

// NewSender returns the Sender for c.Type.
func NewSender(c ReceiverConfig) (Sender, error) {
	f, ok := senderFactories[c.Type]
	if !ok {
		return nil, fmt.Errorf("%w: unknown receiver type %q (want one of %s)", ErrConfig, c.Type, strings.Join(Types(), ", "))
	}
	src := f(c)
	if v, ok := src.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// malformed wraps ErrMalformed with a message for the sender.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// ignored wraps ErrIgnored with the reason, logged at debug level.
func ignored(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrIgnored, fmt.Sprintf(format, args...))
}

// mediaType returns the request's media type without parameters, lower
// case; empty when absent or unparsable.
func mediaType(h http.Header) string {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// requireMediaType fails with ErrUnsupportedMediaType unless the request's
// media type is one of want.
func requireMediaType(r *http.Request, want ...string) error {
	mt := mediaType(r.Header)
	for _, w := range want {
		if mt == w {
			return nil
		}
	}
	got := r.Header.Get("Content-Type")
	if got == "" {
		got = "none"
	}
	return fmt.Errorf("%w %q: want %s", ErrUnsupportedMediaType, got, strings.Join(want, " or "))
}

// equalSecret compares in constant time. Hashing first keeps the time
// independent of the lengths too.
func equalSecret(got, want string) bool {
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// validHMAC reports whether sigHex is the hex HMAC-SHA256 of body keyed
// with secret, compared in constant time.
func validHMAC(secret string, body []byte, sigHex string) bool {
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != sha256.Size {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}

// Sign returns "sha256=<hex HMAC-SHA256(secret, body)>", the value GitHub
// sends in X-Hub-Signature-256 and the generic receiver expects in
// X-Signature-256. Senders and tests use it.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// headerAuth authenticates senders that send a configured static header
// (Distribution, GitLab, Harbor, Zot, ACR, Event Grid). The header holds
// the secret itself or "Bearer <secret>".
type headerAuth struct{ header string }

func newHeaderAuth(c ReceiverConfig) headerAuth {
	h := c.Header
	if h == "" {
		h = "Authorization"
	}
	return headerAuth{header: h}
}

func (a headerAuth) Authenticate(r *http.Request, _ []byte, secret string) error {
	return AuthenticateHeader(r, a.header, secret)
}

// AuthenticateHeader checks that header holds secret, as is or as
// "Bearer <secret>", in constant time. Errors wrap ErrUnauthenticated
// (no header) or ErrForbidden.
func AuthenticateHeader(r *http.Request, header, secret string) error {
	v := r.Header.Get(header)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, header)
	}
	// Both comparisons always run, so timing does not say which form failed.
	exact := equalSecret(v, secret)
	bearer := false
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		bearer = equalSecret(strings.TrimSpace(v[7:]), secret)
	}
	if !exact && !bearer {
		return fmt.Errorf("%w: %s header does not match", ErrForbidden, header)
	}
	return nil
}

// signatureAuth authenticates "sha256=<hex>" HMAC-SHA256 signatures of the
// raw body in a header (GitHub, generic).
type signatureAuth struct{ header string }

func (a signatureAuth) Authenticate(r *http.Request, body []byte, secret string) error {
	v := r.Header.Get(a.header)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, a.header)
	}
	hexSig, ok := strings.CutPrefix(v, "sha256=")
	if !ok || !validHMAC(secret, body, hexSig) {
		return fmt.Errorf("%w: %s does not match the body", ErrForbidden, a.header)
	}
	return nil
}

// pathAuth is for senders that can neither sign nor send headers: the
// receiver only routes requests on the secret path to them.
type pathAuth struct{}

func (pathAuth) Authenticate(*http.Request, []byte, string) error { return nil }
func (pathAuth) pathIsSecret()                                    {}

// keyAuthenticated marks sources authenticated by configured public keys
// (signed tokens) rather than a shared secret.
type keyAuthenticated interface {
	keyAuthenticated()
}

// Name grammar of the distribution spec, compiled at first use: a process
// that never reads a notification (a one-shot sync) does not pay for it at
// start.
var (
	repoRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)
	})
	tagRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`) })
	hostRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]{1,5})?$`)
	})
)

// maxRepoLen bounds repository paths as registries do.
const maxRepoLen = 255

// normalize checks a push and puts it in canonical form: the host lower
// case and as regclient names it (so it compares with parsed catalog
// references), a digest that a sender put in the tag moved to Digest.
func normalize(p Push) (Push, error) {
	p.Host = strings.ToLower(strings.TrimSpace(p.Host))
	p.Repository = strings.TrimSpace(p.Repository)
	p.Tag = strings.TrimSpace(p.Tag)
	p.Digest = strings.TrimSpace(p.Digest)
	// Harbor and others put the digest in the tag field of untagged pushes.
	if strings.Contains(p.Tag, ":") {
		if p.Digest != "" && p.Digest != p.Tag {
			return Push{}, malformed("tag %q is neither a tag nor the digest %q", p.Tag, p.Digest)
		}
		p.Digest, p.Tag = p.Tag, ""
	}
	if len(p.Repository) > maxRepoLen || !repoRE().MatchString(p.Repository) {
		return Push{}, malformed("invalid repository name %q", p.Repository)
	}
	if p.Tag != "" && !tagRE().MatchString(p.Tag) {
		return Push{}, malformed("invalid tag %q", p.Tag)
	}
	if p.Digest != "" {
		if _, err := digest.Parse(p.Digest); err != nil {
			return Push{}, malformed("invalid digest %q", p.Digest)
		}
	}
	if p.Host != "" {
		if !hostRE().MatchString(p.Host) {
			return Push{}, malformed("invalid registry host %q", p.Host)
		}
		// regclient rewrites some hosts (and the repositories of single
		// name images) when it parses a reference; compare in its terms.
		r, err := ref.New(p.Host + "/" + p.Repository)
		if err != nil || r.Scheme != "reg" {
			return Push{}, malformed("invalid image %q", p.Host+"/"+p.Repository)
		}
		p.Host, p.Repository = strings.ToLower(r.Registry), r.Repository
	}
	if len(p.MediaType) > 255 || strings.ContainsFunc(p.MediaType, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		p.MediaType = ""
	}
	return p, nil
}

// normalizeAll normalizes every push, failing on the first bad one.
func normalizeAll(ps []Push) ([]Push, error) {
	out := make([]Push, 0, len(ps))
	for _, p := range ps {
		n, err := normalize(p)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// hostOf returns the host of an image reference or URL without scheme,
// e.g. "registry.example.test/acme/x:v1" → "registry.example.test"; empty
// when the first path element does not look like a host.
func hostOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	h, _, ok := strings.Cut(s, "/")
	if !ok || h == "" {
		return ""
	}
	// As the docker reference grammar: a host has a dot, a port, or is localhost.
	if !strings.ContainsAny(h, ".:") && h != "localhost" {
		return ""
	}
	if !hostRE().MatchString(h) {
		return ""
	}
	return strings.ToLower(h)
}

// defaultRegistry is the registry regclient assumes for references without
// a host, so Docker Hub pushes compare with catalogs written "acme/x:v1".
func defaultRegistry() string {
	r, err := ref.New("library/catalogsync")
	if err != nil {
		return ""
	}
	return r.Registry
}
