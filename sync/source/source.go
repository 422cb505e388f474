// Package source reads catalog images from registries and OCI layouts with
// regclient: it resolves a reference to a digest with one manifest HEAD,
// picks the platform's manifest from an index, reads the catalog label from
// the config, and streams decompressed layers.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/scheme/reg"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/errs"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/platform"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/internal/stall"
)

// ConfigsLabel names the directory of the image that holds the FBC.
const ConfigsLabel = "operators.operatorframework.io.index.configs.v1"

var (
	// ErrInvalidRef is returned for an image reference that cannot be parsed.
	ErrInvalidRef = errors.New("invalid image reference")
	// ErrMissingLabel is returned when the image config lacks ConfigsLabel.
	ErrMissingLabel = errors.New("image has no catalog label " + ConfigsLabel)
	// ErrNotImage is returned when the manifest is not an image or has no
	// manifest for the wanted platform.
	ErrNotImage = errors.New("not a catalog image")
	// ErrLocalRefused is returned for an ocidir:// reference when local
	// sources are off (WithLocalSources(false)).
	ErrLocalRefused = errors.New("local image sources are not allowed here")
	// ErrLocalMissing is returned for an ocidir:// reference whose
	// directory does not exist: waiting will not make it appear.
	ErrLocalMissing = errors.New("local image layout does not exist")
	// ErrAuth is wrapped by registry errors that refused access (401,
	// 403): credentials missing or wrong, or without pull access. It is
	// retryable, but not soon: credentials change when someone changes
	// them.
	ErrAuth = errors.New("registry authentication failed")
)

// Host configures how one registry host is reached.
type Host struct {
	// Name is the registry as written in image references (host[:port]).
	Name string `json:"name" yaml:"name"`
	// PlainHTTP talks HTTP instead of HTTPS.
	PlainHTTP bool `json:"plainHTTP,omitempty" yaml:"plainHTTP,omitempty"`
	// InsecureSkipVerify accepts self-signed certificates.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty" yaml:"insecureSkipVerify,omitempty"`
	// ReqPerSec limits the request rate to this host (0: unlimited).
	ReqPerSec float64 `json:"reqPerSec,omitempty" yaml:"reqPerSec,omitempty"`
	// CAFile is a PEM bundle trusted for this host besides the system's
	// and the global ones; read again when it changes.
	CAFile string `json:"caFile,omitempty" yaml:"caFile,omitempty"`
	// Username and Password authenticate to this host (basic, or for the
	// registry's token service), over the docker config and pull secret.
	Username string `json:"username,omitempty" yaml:"username,omitempty"`
	Password string `json:"password,omitempty" yaml:"password,omitempty"`
}

type options struct {
	platform   string
	hosts      []Host
	dockerCfg  bool
	retryLimit int
	delayInit  time.Duration
	delayMax   time.Duration
	logger     *slog.Logger
	transport  http.RoundTripper
	stall      time.Duration
	noLocal    bool
	caFiles    []string
	caDirs     []string
	creds      CredentialProvider
	regconf    *regconf.Config
	live       Mirrors
}

// Option configures a Source.
type Option func(*options)

// WithPlatform selects the manifest picked from an image index ("os/arch[/variant]").
func WithPlatform(p string) Option { return func(o *options) { o.platform = p } }

// WithHosts configures registry hosts (plain HTTP, self-signed TLS, rate).
func WithHosts(hosts ...Host) Option { return func(o *options) { o.hosts = append(o.hosts, hosts...) } }

// WithDockerConfig reads credentials and certificates from the docker
// config (~/.docker/config.json or $DOCKER_CONFIG).
func WithDockerConfig(on bool) Option { return func(o *options) { o.dockerCfg = on } }

// WithRetry sets how often regclient retries one request and its backoff.
// The sync engine retries whole syncs; keep this small so failures show fast.
func WithRetry(limit int, delayInit, delayMax time.Duration) Option {
	return func(o *options) { o.retryLimit, o.delayInit, o.delayMax = limit, delayInit, delayMax }
}

// WithLogger sets the logger regclient writes to.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// ErrStalled is wrapped by the errors of registry requests that got no
// traffic for the stall timeout.
var ErrStalled = stall.ErrStalled

// DefaultStallTimeout is how long a registry may send nothing.
const DefaultStallTimeout = time.Minute

// WithStallTimeout sets how long a registry may send nothing (no response
// to a request, no byte of a body) before the request fails with
// ErrStalled (default DefaultStallTimeout; negative: never).
func WithStallTimeout(d time.Duration) Option { return func(o *options) { o.stall = d } }

// WithLocalSources allows (the default) or refuses ocidir:// references,
// which read the local file system: refuse them where references come
// from people who must not make the service read its disk (ClusterCatalogs).
func WithLocalSources(on bool) Option { return func(o *options) { o.noLocal = !on } }

// WithTransport sets the base HTTP transport (tests inject faults with it).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// Client reads catalog images from registries and OCI layouts. It is safe
// for concurrent use.
type Client struct {
	acc      *access
	mirrors  Mirrors
	log      *slog.Logger
	platform platform.Platform
	ra       *retryAfter
	noLocal  bool
}

// New returns a Client.
func New(opts ...Option) (*Client, error) {
	o := options{
		platform:   "linux/amd64",
		dockerCfg:  true,
		retryLimit: 2,
		delayInit:  200 * time.Millisecond,
		delayMax:   2 * time.Second,
		logger:     slog.New(slog.DiscardHandler),
		stall:      DefaultStallTimeout,
	}
	for _, fn := range opts {
		fn(&o)
	}
	o.hosts = append(o.hosts, insecureHosts(o.regconf, o.hosts)...)
	plat, err := platform.Parse(o.platform)
	if err != nil || plat.OS == "" || plat.Architecture == "" {
		return nil, fmt.Errorf("invalid platform %q: want os/arch[/variant]", o.platform)
	}
	base := o.transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 8
		tr := newTrust(&o)
		if err := tr.check(); err != nil {
			return nil, err
		}
		tr.install(t)
		base = t
	}
	base = stall.Transport(base, o.stall)
	ra := &retryAfter{until: map[string]time.Time{}}
	hc := &http.Client{Transport: &recordingTransport{base: base, ra: ra}}

	rcOpts := []regclient.Opt{
		regclient.WithSlog(o.logger),
		regclient.WithRegOpts(reg.WithRetryLimit(o.retryLimit), reg.WithDelay(o.delayInit, o.delayMax), reg.WithHTTPClient(hc)),
		regclient.WithUserAgent("catalogsync"),
	}
	if o.dockerCfg {
		rcOpts = append(rcOpts, regclient.WithDockerCreds(), regclient.WithDockerCerts())
	}
	acc, err := newAccess(&o, rcOpts)
	if err != nil {
		return nil, err
	}
	c := &Client{acc: acc, platform: plat, ra: ra, noLocal: o.noLocal, log: o.logger}
	switch {
	case o.live != nil:
		c.mirrors = o.live
	case o.regconf != nil:
		c.mirrors = o.regconf
	}
	return c, nil
}

// Resolved is an image reference pinned to a digest.
type Resolved struct {
	// Image is the reference as configured.
	Image string
	// Digest is the digest the reference resolved to (of an index when the
	// image is multi-platform), e.g. "sha256:ab12…".
	Digest string
	// Ref is the pinned reference, e.g. "host/repo@sha256:ab12…".
	Ref string
	// Pinned is true when Image already named the digest.
	Pinned bool
	// Mirror is the registries.conf mirror that served it; empty when the
	// image's own registry did.
	Mirror string

	ref ref.Ref
}

// ParseRef parses an image reference: "host/repo:tag", "host/repo@sha256:…"
// or "ocidir://path:tag".
func ParseRef(image string) (ref.Ref, error) {
	if strings.TrimSpace(image) != image || image == "" {
		return ref.Ref{}, fmt.Errorf("%w %q", ErrInvalidRef, image)
	}
	r, err := ref.New(image)
	if err != nil {
		return ref.Ref{}, fmt.Errorf("%w %q: %v", ErrInvalidRef, image, err)
	}
	return r, nil
}

// Pin returns the Resolved value of a reference that already names its
// digest, without any request; ok is false for tag references.
func Pin(image string) (Resolved, bool, error) {
	r, err := ParseRef(image)
	if err != nil {
		return Resolved{}, false, err
	}
	if r.Digest == "" {
		return Resolved{}, false, nil
	}
	pinned := r.SetDigest(r.Digest)
	return Resolved{Image: image, Digest: r.Digest, Ref: pinned.CommonName(), Pinned: true, ref: pinned}, true, nil
}

// Resolve pins image to a digest. A digest reference is returned as is;
// a tag costs exactly one manifest HEAD.
func (s *Client) Resolve(ctx context.Context, image string) (Resolved, error) {
	if err := s.checkLocal(image); err != nil {
		return Resolved{}, err
	}
	if r, err := ParseRef(image); err == nil {
		eps, ok, err := s.mirrored(r)
		if err != nil {
			return Resolved{}, err
		}
		if ok {
			return s.resolveMirrored(ctx, image, r, eps)
		}
	}
	if res, ok, err := Pin(image); err != nil || ok {
		return res, err
	}
	r, _ := ParseRef(image)
	m, err := s.acc.client().ManifestHead(ctx, r, regclient.WithManifestRequireDigest())
	if err != nil {
		return Resolved{}, s.wrap(r, "resolve", err)
	}
	d := m.GetDescriptor().Digest
	if d == "" || d.Validate() != nil {
		return Resolved{}, fmt.Errorf("resolve %s: registry returned no valid digest", r.CommonName())
	}
	pinned := r.SetDigest(d.String())
	return Resolved{Image: image, Digest: d.String(), Ref: pinned.CommonName(), ref: pinned}, nil
}

// checkLocal refuses ocidir:// references when local sources are off, and
// ones whose directory is missing (terminal: not a registry that may come
// back).
func (s *Client) checkLocal(image string) error {
	r, err := ParseRef(image)
	if err != nil || r.Scheme != "ocidir" {
		return err
	}
	if s.noLocal {
		return fmt.Errorf("%w: %q (ocidir:// reads this service's own disk)", ErrLocalRefused, image)
	}
	if _, err := os.Stat(r.Path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrLocalMissing, r.Path)
	}
	return nil
}

// Layer is one layer of a catalog image.
type Layer struct {
	Digest    string
	MediaType string
	Size      int64

	desc descriptor.Descriptor
}

// Image is a catalog image's manifest and the label that names its FBC directory.
type Image struct {
	Resolved Resolved
	// ManifestDigest is the platform manifest's digest (the index's child).
	ManifestDigest string
	// ConfigsDir is the label's value: the FBC directory inside the image.
	ConfigsDir string
	Layers     []Layer
}

// TotalSize sums the compressed layer sizes.
func (img *Image) TotalSize() int64 {
	var n int64
	for _, l := range img.Layers {
		n += l.Size
	}
	return n
}

// Open fetches the manifest (the platform's, for an index) and the image
// config, and returns the layers to stream.
func (s *Client) Open(ctx context.Context, res Resolved) (*Image, error) {
	r := res.ref
	m, err := s.acc.client().ManifestGet(ctx, r)
	if err != nil {
		return nil, s.wrap(r, "get manifest", err)
	}
	for depth := 0; m.IsList(); depth++ {
		if depth > 4 {
			return nil, fmt.Errorf("%w: %s: image indexes nested too deep", ErrNotImage, r.CommonName())
		}
		d, err := manifest.GetPlatformDesc(m, &s.platform)
		if err != nil {
			return nil, fmt.Errorf("%w: %s has no manifest for platform %s", ErrNotImage, r.CommonName(), s.platform.String())
		}
		r = r.SetDigest(d.Digest.String())
		if m, err = s.acc.client().ManifestGet(ctx, r); err != nil {
			return nil, s.wrap(r, "get platform manifest", err)
		}
	}
	im, ok := m.(manifest.Imager)
	if !ok {
		return nil, fmt.Errorf("%w: %s has media type %s", ErrNotImage, r.CommonName(), m.GetDescriptor().MediaType)
	}
	cd, err := im.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotImage, r.CommonName(), err)
	}
	cfg, err := s.acc.client().BlobGetOCIConfig(ctx, r, cd)
	if err != nil {
		return nil, s.wrap(r, "get image config", err)
	}
	dir := cfg.GetConfig().Config.Labels[ConfigsLabel]
	if dir == "" {
		return nil, fmt.Errorf("%w: %s", ErrMissingLabel, res.Ref)
	}
	layers, err := im.GetLayers()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotImage, r.CommonName(), err)
	}
	img := &Image{Resolved: res, ManifestDigest: m.GetDescriptor().Digest.String(), ConfigsDir: dir}
	for _, l := range layers {
		img.Layers = append(img.Layers, Layer{Digest: l.Digest.String(), MediaType: l.MediaType, Size: l.Size, desc: l})
	}
	img.Resolved.ref = r
	return img, nil
}

// OpenLayer streams layer i of img, decompressed. progress, if set, is
// called with the compressed bytes read so far. The blob's digest is
// verified by regclient when the stream reaches its end: read to EOF.
func (s *Client) OpenLayer(ctx context.Context, img *Image, i int, progress func(done int64)) (*LayerReader, error) {
	if i < 0 || i >= len(img.Layers) {
		return nil, fmt.Errorf("layer %d out of range", i)
	}
	l := img.Layers[i]
	rdr, err := s.acc.client().BlobGet(ctx, img.Resolved.ref, l.desc)
	if err != nil {
		return nil, s.wrap(img.Resolved.ref, "get layer "+l.Digest, err)
	}
	var body io.Reader = rdr
	if progress != nil {
		body = &countingReader{r: rdr, fn: progress}
	}
	dec, err := Decompress(l.MediaType, body)
	if err != nil {
		rdr.Close()
		return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	return &LayerReader{Reader: dec, raw: body, closers: []io.Closer{dec, rdr}}, nil
}

// Close releases the client's connections.
func (s *Client) Close() error { return s.acc.client().Close(context.Background(), ref.Ref{}) }

// LayerReader is a decompressed layer stream.
type LayerReader struct {
	io.Reader
	raw     io.Reader
	closers []io.Closer
}

// NewLayerReader returns a LayerReader over an uncompressed layer stream
// that another image source (or a test) opened: Finish reads r to its end,
// Close closes closers.
func NewLayerReader(r io.Reader, closers ...io.Closer) *LayerReader {
	return &LayerReader{Reader: r, raw: r, closers: closers}
}

// maxTrailing bounds what may follow the tar archive inside a layer.
const maxTrailing = 1 << 20

// Finish reads what is left of the layer after the tar archive ended, so
// the blob's digest and size are verified at EOF; a layer that hides more
// than a little data after its archive is refused.
func (l *LayerReader) Finish() error {
	n, err := io.Copy(io.Discard, io.LimitReader(l.Reader, maxTrailing+1))
	if err != nil {
		return fmt.Errorf("read layer end: %w", err)
	}
	if n > maxTrailing {
		return fmt.Errorf("%w: more than %d bytes after the tar archive", ErrCompression, maxTrailing)
	}
	if _, err := io.Copy(io.Discard, l.raw); err != nil {
		return fmt.Errorf("verify layer: %w", err)
	}
	return nil
}

// Close releases the layer's connection.
func (l *LayerReader) Close() error {
	var errs []error
	for _, c := range l.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

type countingReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if n > 0 {
		c.fn(c.n)
	}
	return n, err
}

// wrap turns a regclient error into one that says what failed, and keeps
// the sentinel values so callers can classify it.
func (s *Client) wrap(r ref.Ref, what string, err error) error {
	if errors.Is(err, errs.ErrHTTPUnauthorized) {
		// Says where to look, never what was sent.
		err = fmt.Errorf("%w: %s refused access to %s (credentials missing or wrong, or without pull access; check the credentials configured for %s): %w",
			ErrAuth, r.Registry, r.Repository, r.Registry, err)
	}
	e := &RegistryError{Op: what, Ref: r.CommonName(), Err: err}
	if r.Scheme == "reg" {
		e.RetryAfter = s.ra.get(r.Registry)
	}
	return e
}

// RegistryError is a failed registry (or OCI layout) operation.
type RegistryError struct {
	Op, Ref    string
	Err        error
	RetryAfter time.Duration
}

func (e *RegistryError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Ref, e.Err) }
func (e *RegistryError) Unwrap() error { return e.Err }

// Retryable reports whether err is worth another attempt later: network
// errors, timeouts, 5xx, 429, authentication (ErrAuth: credentials may be
// fixed) and not-found (a tag may appear, a mirror may catch up). Malformed references and content that is
// not a catalog image are not.
func Retryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrInvalidRef), errors.Is(err, errs.ErrInvalidReference),
		errors.Is(err, ErrLocalRefused), errors.Is(err, ErrLocalMissing), errors.Is(err, ErrBlocked),
		errors.Is(err, ErrNotImage), errors.Is(err, errs.ErrUnsupportedMediaType),
		errors.Is(err, errs.ErrMissingTagOrDigest):
		return false
	}
	return true
}

// RetryAfter returns the delay a registry asked for (Retry-After), if any.
func RetryAfter(err error) time.Duration {
	var re *RegistryError
	if errors.As(err, &re) {
		return re.RetryAfter
	}
	return 0
}

// retryAfter remembers, per host, until when the registry asked us to wait.
type retryAfter struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (r *retryAfter) set(host string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until[host] = time.Now().Add(d)
}

func (r *retryAfter) get(host string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := time.Until(r.until[host]); d > 0 {
		return d
	}
	return 0
}

type recordingTransport struct {
	base http.RoundTripper
	ra   *retryAfter
}

// RoundTrip records Retry-After and hides it from regclient, which would
// otherwise sleep it out inside the request: the sync must fail at once,
// show "Retrying" on the status, and let the engine wait (honouring the
// recorded delay) without holding a worker.
func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d := parseRetryAfter(resp.Header.Get("Retry-After")); d > 0 {
			t.ra.set(req.URL.Host, d)
		}
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// parseRetryAfter reads delay-seconds or an HTTP date; nonsense gives 0 and
// absurd values are capped at an hour.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := time.ParseDuration(strings.TrimSpace(v) + "s"); err == nil {
		d = secs
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	if d < 0 {
		return 0
	}
	return min(d, time.Hour)
}
