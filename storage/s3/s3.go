// Package s3 is the S3 storage backend: AWS S3 or any service speaking its
// API with conditional writes (MinIO and others), through aws-sdk-go-v2.
//
// A key maps to the object Prefix+key in Bucket, so several deployments can
// share a bucket under different (non-nested) prefixes. Put streams:
// objects smaller than one part go up with one PutObject, larger ones as a
// multipart upload whose parts wait in an unlinked scratch file, at most
// (Concurrency+1) of them whatever the object's size, none in the heap
// (parts.go says why this is not the SDK's transfer manager). PutIf is a
// conditional PutObject (If-None-Match: * to create, If-Match: <etag> to
// swap), which S3 and MinIO evaluate atomically. Nothing relies on
// conditional deletes: MinIO ignores If-Match on DeleteObject.
//
// A multipart upload that fails is aborted, with a context of its own so
// that a cancelled Put aborts too; when even the abort fails (the server is
// gone), its parts stay behind invisible to List until AbortStaleUploads
// (catalog.GC calls it) removes them.
package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/catalogsync/catalogsync/internal/stall"
	"github.com/catalogsync/catalogsync/storage"
)

var (
	// ErrConfig is returned by New for an incomplete or invalid Config.
	ErrConfig = errors.New("invalid s3 configuration")
	// ErrNoSuchBucket is returned when the configured bucket does not exist.
	ErrNoSuchBucket = errors.New("bucket does not exist")
	// ErrBadCredentials is returned when the service rejects the
	// credentials themselves (unknown access key, wrong secret, expired
	// token), or when none could be found.
	ErrBadCredentials = errors.New("credentials rejected")
	// ErrAccessDenied is returned when valid credentials lack a permission.
	ErrAccessDenied = errors.New("access denied")
	// ErrReadOnly is returned by New when the bucket can be read but not
	// written (or not deleted from) with the credentials.
	ErrReadOnly = errors.New("bucket is read-only for these credentials")
	// ErrNoConditionalWrites is returned by New when the service accepts a
	// create-only write over an existing object: it ignores If-None-Match,
	// so publishing could not be atomic.
	ErrNoConditionalWrites = errors.New("service does not honour conditional writes")
)

// Defaults of the part size and parallel parts per Put. One part at a
// time: on two cores with MinIO beside it a 220 MB sync took 4.2-4.5 s with
// one and 5.5-5.8 s with three (when parts were heap buffers,
// docs/benchmarks.md). A far S3 may want more (--s3-upload-concurrency).
const (
	DefaultPartSize    = 5 << 20
	DefaultConcurrency = 1
	// minPartSize is the smallest part S3 accepts (but for the last).
	minPartSize = 5 << 20
	// abortTimeout bounds the abort of a failed multipart upload, which
	// runs even when the Put's context has ended.
	abortTimeout = 30 * time.Second
	// probePrefix names the object New writes and deletes to check that
	// the bucket is writable.
	probePrefix = ".catalogsync-probe-"
)

// Config says where the store is and how to reach it.
type Config struct {
	// Bucket is required.
	Bucket string `json:"bucket"`
	// Endpoint overrides the service URL (MinIO: "http://host:9000").
	Endpoint string `json:"endpoint,omitempty"`
	// Region defaults to AWS_REGION, else AWS_DEFAULT_REGION, else
	// us-east-1 when an Endpoint is set.
	Region string `json:"region,omitempty"`
	// Prefix is prepended to every key ("team-a" stores under "team-a/").
	Prefix string `json:"prefix,omitempty"`
	// PathStyle addresses the bucket in the path, not the host name, as
	// MinIO and most S3-compatible services need.
	PathStyle bool `json:"pathStyle,omitempty"`

	// Static credentials; when AccessKeyID is empty the chain of
	// credentialChain is used (AWS_ACCESS_KEY_ID, web identity, the
	// shared credentials file, container and instance roles). Never read
	// from config files.
	AccessKeyID     string `json:"-"`
	SecretAccessKey string `json:"-"`
	SessionToken    string `json:"-"`

	// PartSize (at least 5 MiB) and Concurrency tune multipart uploads:
	// a Put holds at most Concurrency+1 parts, in a scratch file in
	// TempDir. Zero means the default.
	PartSize    int64 `json:"partSize,omitempty"`
	Concurrency int   `json:"concurrency,omitempty"`
	// TempDir holds the scratch files of uploads under way, unlinked as
	// soon as they are made; "" means os.TempDir().
	TempDir string `json:"-"`
	// MaxAttempts bounds the SDK's tries per request (default 3).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// HTTPClient replaces the SDK's HTTP client (tests, custom TLS).
	HTTPClient *http.Client `json:"-"`
	// StallTimeout fails a request once the service has sent nothing (no
	// response, no byte of a body either way) for this long, so a hung
	// store cannot hold a sync or a reader for ever. 0 means
	// DefaultStallTimeout; negative, never.
	StallTimeout time.Duration `json:"stallTimeout,omitempty"`
}

// DefaultStallTimeout is Config.StallTimeout's default.
const DefaultStallTimeout = time.Minute

func (c Config) stallTimeout() time.Duration {
	if c.StallTimeout == 0 {
		return DefaultStallTimeout
	}
	return c.StallTimeout
}

// Store is a storage.Store in an S3 bucket.
type Store struct {
	client *awss3.Client
	bucket string
	prefix string

	partSize    int64
	concurrency int
	tempDir     string
	maxParts    int32 // S3's maxParts; lower in tests
	maxCopy     int64 // the largest object CopyObject takes; lower in tests
	// signPayload: requests go over plain HTTP, where SigV4 signs each
	// body's SHA-256 (over HTTPS the SDK sends it unsigned).
	signPayload bool
}

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.InfoGetter   = (*Store)(nil)
	_ storage.HeaderPutter = (*Store)(nil)
	_ storage.Copier       = (*Store)(nil)
)

// New connects to the bucket and checks, before returning, that it exists,
// that the credentials are accepted, that they may list, write and delete
// under the prefix, and that the service honours conditional writes. The
// errors name the problem (ErrNoSuchBucket, ErrBadCredentials,
// ErrAccessDenied, ErrReadOnly, ErrNoConditionalWrites), so a server can
// refuse to start rather than fail at its first sync.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// cleanPrefix validates a key prefix and gives it its trailing slash.
func cleanPrefix(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	if !storage.ValidKey(p) {
		return "", fmt.Errorf("s3: prefix %q: %w", p, ErrConfig)
	}
	return p + "/", nil
}

func open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: no bucket: %w", ErrConfig)
	}
	prefix, err := cleanPrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < minPartSize {
		return nil, fmt.Errorf("s3: part size %d below the minimum %d: %w", cfg.PartSize, minPartSize, ErrConfig)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	awsCfg, err := awsConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Endpoint != "" {
		if u, err := url.Parse(cfg.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("s3: endpoint %q is not a URL like https://host:port: %w", cfg.Endpoint, ErrConfig)
		}
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		o.HTTPClient = stall.Client(o.HTTPClient, cfg.stallTimeout())
		o.Retryer = stallRetryer{o.Retryer}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return &Store{client: client, bucket: cfg.Bucket, prefix: prefix,
		partSize: cfg.PartSize, concurrency: cfg.Concurrency, tempDir: cfg.TempDir, maxParts: maxParts, maxCopy: maxCopy,
		signPayload: strings.HasPrefix(strings.ToLower(cfg.Endpoint), "http:")}, nil
}

// check probes what New promises: list, create-only write (twice: the
// second must be refused), delete.
func (s *Store) check(ctx context.Context) error {
	var b [8]byte
	rand.Read(b[:])
	probe := s.prefix + probePrefix + hex.EncodeToString(b[:])
	put := func() error {
		_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(probe),
			Body: bytes.NewReader([]byte("probe")), IfNoneMatch: aws.String("*"),
		})
		return err
	}
	// The list and the first write go out together: every process start
	// waits for one round trip fewer. The list's refusal still comes
	// first, and a probe written meanwhile is removed.
	listed := make(chan error, 1)
	go func() {
		_, err := s.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{
			Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), MaxKeys: aws.Int32(1),
		})
		listed <- err
	}()
	first := put()
	if err := <-listed; err != nil {
		if first == nil {
			_ = s.deleteRaw(ctx, probe)
		}
		return s.setupErr("list", err)
	}
	if err := first; err != nil {
		if errors.Is(classify(err), ErrAccessDenied) {
			return fmt.Errorf("s3: bucket %s: writing %s: %w: %w: %w", s.bucket, probe, ErrReadOnly, ErrAccessDenied, err)
		}
		return s.setupErr("write probe", err)
	}
	second := put()
	delErr := s.deleteRaw(ctx, probe)
	switch {
	case second == nil:
		return fmt.Errorf("s3: bucket %s: a create-only write replaced an existing object: %w", s.bucket, ErrNoConditionalWrites)
	case !errors.Is(classify(second), storage.ErrPrecondition):
		if code := apiCode(second); code == "NotImplemented" {
			return fmt.Errorf("s3: bucket %s: %w: %w", s.bucket, ErrNoConditionalWrites, second)
		}
		return s.setupErr("conditional write probe", second)
	}
	if delErr != nil {
		if errors.Is(classify(delErr), ErrAccessDenied) {
			return fmt.Errorf("s3: bucket %s: deleting %s: %w: %w: %w", s.bucket, probe, ErrReadOnly, ErrAccessDenied, delErr)
		}
		return s.setupErr("delete probe", delErr)
	}
	return nil
}

func (s *Store) setupErr(op string, err error) error {
	if c := classify(err); c != nil && !errors.Is(c, storage.ErrNotExist) {
		return fmt.Errorf("s3: bucket %s: %s: %w: %w", s.bucket, op, c, err)
	}
	if code := apiCode(err); code == "NoSuchBucket" {
		return fmt.Errorf("s3: bucket %s: %s: %w: %w", s.bucket, op, ErrNoSuchBucket, err)
	}
	return fmt.Errorf("s3: bucket %s: %s: %w", s.bucket, op, err)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// classify maps an SDK error onto a sentinel, or nil when none fits.
func classify(err error) error {
	switch apiCode(err) {
	case "NoSuchBucket":
		return ErrNoSuchBucket
	case "NoSuchKey", "NotFound":
		return storage.ErrNotExist
	case "PreconditionFailed", "ConditionalRequestConflict":
		return storage.ErrPrecondition
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidSecurity":
		return ErrBadCredentials
	case "AccessDenied", "AllAccessDisabled", "Forbidden":
		return ErrAccessDenied
	}
	switch httpStatus(err) {
	case http.StatusNotFound:
		return storage.ErrNotExist
	case http.StatusPreconditionFailed:
		return storage.ErrPrecondition
	case http.StatusForbidden:
		return ErrAccessDenied
	}
	// No credentials came from the chain (checked): nothing was signed.
	if errors.Is(err, ErrBadCredentials) {
		return ErrBadCredentials
	}
	return nil
}

// wrap describes a failed operation, wrapping the matching sentinel and the
// context's error when the context ended (the SDK does not always wrap it).
// A write refused for permission is also storage.ErrDenied.
func wrap(ctx context.Context, op, key string, err error) error {
	if c := classify(err); c != nil {
		if errors.Is(c, ErrAccessDenied) && (op == "put" || op == "putif" || op == "delete" || op == "copy") {
			c = fmt.Errorf("%w: %w", c, storage.ErrDenied)
		}
		err = fmt.Errorf("%w: %w", c, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, err)
}

func (s *Store) checkKey(key string) error {
	if !storage.ValidKey(key) {
		return fmt.Errorf("s3: %q: %w", key, storage.ErrInvalidKey)
	}
	return nil
}

// etag strips the quotes S3 puts around ETags; ifMatch puts them back.
func etag(p *string) string { return strings.Trim(aws.ToString(p), `"`) }

func ifMatch(e string) string {
	if strings.HasPrefix(e, `"`) || strings.HasPrefix(e, "W/") {
		return e
	}
	return `"` + e + `"`
}

// Put implements storage.Store. The stream goes up in parts of PartSize;
// on any failure the multipart upload is aborted, so nothing appears.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (storage.Info, error) {
	return s.PutHeaders(ctx, key, r, storage.Headers{})
}

// PutHeaders implements storage.HeaderPutter: Put, the object answering
// GETs with h's Content-Type and Content-Encoding.
func (s *Store) PutHeaders(ctx context.Context, key string, r io.Reader, h storage.Headers) (storage.Info, error) {
	if err := s.checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, fmt.Errorf("s3: put %q: %w", key, err)
	}
	tag, n, err := s.putStream(ctx, s.prefix+key, r, h)
	if err != nil {
		return storage.Info{}, wrap(ctx, "put", key, err)
	}
	// PutObject and CompleteMultipartUpload return no modification time;
	// the local clock is close enough for a Put's caller (List and Stat
	// give the server's).
	return storage.Info{Key: key, Size: n, ModTime: time.Now(), ETag: tag}, nil
}

// countingReader counts what the uploader read and stops it once ctx
// ends: the uploader checks its context only between requests.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// PutIf implements storage.Store with a conditional PutObject.
func (s *Store) PutIf(ctx context.Context, key string, data []byte, match string) (storage.Info, error) {
	if err := s.checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, fmt.Errorf("s3: putif %q: %w", key, err)
	}
	in := &awss3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	}
	if match == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifMatch(match))
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		// If-Match on a missing key is 404 NoSuchKey: a failed
		// precondition too.
		if match != "" && errors.Is(classify(err), storage.ErrNotExist) {
			return storage.Info{}, fmt.Errorf("s3: putif %q: object missing: %w: %w", key, storage.ErrPrecondition, err)
		}
		return storage.Info{}, wrap(ctx, "putif", key, err)
	}
	return storage.Info{Key: key, Size: int64(len(data)), ModTime: time.Now(), ETag: etag(out.ETag)}, nil
}

// Get implements storage.Store with a ranged GetObject.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rc, _, err := s.get(ctx, key, offset, length, false)
	return rc, err
}

// GetInfo implements storage.InfoGetter: the Info comes with the GetObject
// answer (a range past the end costs a HeadObject more).
func (s *Store) GetInfo(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	return s.get(ctx, key, offset, length, true)
}

func (s *Store) get(ctx context.Context, key string, offset, length int64, withInfo bool) (io.ReadCloser, storage.Info, error) {
	if err := s.checkKey(key); err != nil {
		return nil, storage.Info{}, err
	}
	if offset < 0 {
		return nil, storage.Info{}, fmt.Errorf("s3: get %q: negative offset %d", key, offset)
	}
	if err := ctx.Err(); err != nil {
		return nil, storage.Info{}, fmt.Errorf("s3: get %q: %w", key, err)
	}
	empty := func() (io.ReadCloser, storage.Info, error) {
		var in storage.Info
		if length == 0 || withInfo {
			// No request can ask for zero bytes; only existence (and
			// the Info) matters.
			var err error
			if in, err = s.Stat(ctx, key); err != nil {
				return nil, storage.Info{}, err
			}
		}
		return io.NopCloser(strings.NewReader("")), in, nil
	}
	if length == 0 {
		return empty()
	}
	in := &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)}
	if offset > 0 || length > 0 {
		rng := fmt.Sprintf("bytes=%d-", offset)
		if length > 0 {
			rng += fmt.Sprint(offset + length - 1)
		}
		in.Range = aws.String(rng)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		// 416: the object exists but starts before offset (or is empty).
		if apiCode(err) == "InvalidRange" || httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return empty()
		}
		return nil, storage.Info{}, wrap(ctx, "get", key, err)
	}
	var r io.Reader = out.Body
	if in.Range != nil && out.ContentRange == nil && offset > 0 {
		// The whole object came back (a server may ignore ranges): skip
		// to offset here.
		if _, err := io.CopyN(io.Discard, out.Body, offset); err != nil && !errors.Is(err, io.EOF) {
			out.Body.Close()
			return nil, storage.Info{}, wrap(ctx, "get", key, err)
		}
	}
	if length > 0 {
		r = io.LimitReader(r, length)
	}
	info := storage.Info{Key: key, Size: objectSize(out), ModTime: aws.ToTime(out.LastModified), ETag: etag(out.ETag)}
	return &reader{ctx: ctx, r: r, c: out.Body}, info, nil
}

// objectSize is the whole object's size: the total of a Content-Range
// ("bytes 0-99/1234"), else the length of the body, which is then all of it.
func objectSize(out *awss3.GetObjectOutput) int64 {
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				return n
			}
		}
	}
	return aws.ToInt64(out.ContentLength)
}

type reader struct {
	ctx context.Context
	r   io.Reader
	c   io.Closer
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		if cerr := r.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
	}
	return n, err
}

func (r *reader) Close() error { return r.c.Close() }

// Stat implements storage.Store with HeadObject.
func (s *Store) Stat(ctx context.Context, key string) (storage.Info, error) {
	if err := s.checkKey(key); err != nil {
		return storage.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, fmt.Errorf("s3: stat %q: %w", key, err)
	}
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		return storage.Info{}, wrap(ctx, "stat", key, err)
	}
	return storage.Info{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: etag(out.ETag)}, nil
}

// List implements storage.Store with ListObjectsV2. Objects under the
// prefix whose names are not valid keys (written by other tools) are
// left out: no method could address them.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if !storage.ValidPrefix(prefix) {
		return nil, fmt.Errorf("s3: list %q: %w", prefix, storage.ErrInvalidKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("s3: list %q: %w", prefix, err)
	}
	// URL encoding lets keys with characters XML 1.0 cannot carry come
	// back intact.
	p := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix), EncodingType: types.EncodingTypeUrl,
	})
	var out []storage.Info
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap(ctx, "list", prefix, err)
		}
		for _, o := range page.Contents {
			full, err := url.QueryUnescape(aws.ToString(o.Key))
			if err != nil {
				return nil, fmt.Errorf("s3: list %q: undecodable key %q: %w", prefix, aws.ToString(o.Key), err)
			}
			key, ok := strings.CutPrefix(full, s.prefix)
			if !ok || !storage.ValidKey(key) {
				continue
			}
			out = append(out, storage.Info{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), ETag: etag(o.ETag)})
		}
	}
	// S3 sorts by UTF-8 bytes already; a compatible service might not.
	slices.SortFunc(out, func(a, b storage.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements storage.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3: delete %q: %w", key, err)
	}
	if err := s.deleteRaw(ctx, s.prefix+key); err != nil && !errors.Is(classify(err), storage.ErrNotExist) {
		return wrap(ctx, "delete", key, err)
	}
	return nil
}

func (s *Store) deleteRaw(ctx context.Context, fullKey string) error {
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(fullKey)})
	return err
}

// Location names the bucket and prefix (and the endpoint, when set) for
// messages; it holds no credential.
func (c Config) Location() string {
	loc := "s3://" + c.Bucket
	if p := strings.Trim(c.Prefix, "/"); p != "" {
		loc += "/" + p
	}
	if c.Endpoint != "" {
		loc += " at " + c.Endpoint
	}
	return loc
}
