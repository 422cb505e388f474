package cli

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/internal/httpserver"
	"github.com/catalogsync/catalogsync/internal/tlsprofile"
	"github.com/catalogsync/catalogsync/internal/tlsreload"
	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// Logging is the setting of every command that logs.
type Logging struct {
	LogLevel string `name:"log-level" group:"log" env:"CATALOGSYNC_LOG_LEVEL" default:"info" check:"loglevel" help:"debug, info, warn or error"`
}

// Logger logs to w at the checked --log-level, outside text bounded.
func (c Logging) Logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel)) // the loglevel check accepted it already
	return slog.New(truncate.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})))
}

// Storage selects the store: a local directory or an S3 bucket.
type Storage struct {
	Store string `name:"store" env:"CATALOGSYNC_STORE" file:"storage.dir" docdefault:"${defaultStore}" help:"local store directory"`
	S3    S3     `embed:""`
}

// LocalDir is the store directory to open, "" for S3. The config file's
// directory gives way to a bucket; one given otherwise conflicts with it.
func (f Storage) LocalDir(from Origins) (string, error) {
	switch {
	case f.S3.Bucket == "":
		return cmp.Or(f.Store, DefaultStore), nil
	case f.Store == "" || strings.HasPrefix(from.Of("store"), OriginFile):
		return "", nil
	}
	return "", UsageError{fmt.Sprintf("both a store directory (%s) and an S3 bucket (%s) are configured; choose one", f.Store, f.S3.Bucket)}
}

// S3 are the --s3-* flags. Credentials come from storage/s3's chain
// (AWS_ACCESS_KEY_ID, web identity, container and instance roles, ...),
// never from flags.
type S3 struct {
	Bucket       string        `name:"s3-bucket" env:"CATALOGSYNC_S3_BUCKET" help:"store catalogs in this S3/MinIO bucket instead of --store"`
	Endpoint     string        `name:"s3-endpoint" env:"CATALOGSYNC_S3_ENDPOINT" docdefault:"AWS" help:"endpoint override (MinIO: http://host:9000)"`
	Region       string        `name:"s3-region" env:"CATALOGSYNC_S3_REGION" docdefault:"AWS_REGION" help:"region (else AWS_REGION, AWS_DEFAULT_REGION; us-east-1 with --s3-endpoint)"`
	Prefix       string        `name:"s3-prefix" env:"CATALOGSYNC_S3_PREFIX" help:"key prefix, so several deployments share a bucket"`
	PathStyle    bool          `name:"s3-path-style" env:"CATALOGSYNC_S3_PATH_STYLE" help:"path-style addressing (MinIO)"`
	StallTimeout time.Duration `name:"s3-stall-timeout" env:"CATALOGSYNC_S3_STALL_TIMEOUT" defaultvar:"s3Stall" check:"nonneg" help:"a store that sends nothing this long (no response, no byte either way) fails the request; slow transfers are fine"`
}

// Config is the bucket's storage/s3 configuration.
func (f S3) Config() s3.Config {
	return s3.Config{Bucket: f.Bucket, Endpoint: f.Endpoint, Region: f.Region, Prefix: f.Prefix, PathStyle: f.PathStyle, StallTimeout: f.StallTimeout}
}

// Listening says how each listener holds connections. The cap bounds
// descriptors, goroutines and buffers (about 40 KiB an idle TLS
// connection) well inside a 256Mi pod.
type Listening struct {
	MaxConns      int           `name:"max-connections" group:"http" env:"CATALOGSYNC_MAX_CONNECTIONS" default:"512" check:"positive" help:"connections each listener holds open at once; a new one beyond it closes the connection idle longest (between requests, or silent 2s after connecting), or waits in the listen backlog while every one has a request running"`
	IdleTimeout   time.Duration `name:"idle-timeout" group:"http" env:"CATALOGSYNC_IDLE_TIMEOUT" default:"75s" check:"positive" help:"a keep-alive connection with no new request this long is closed (above the 60s idle timeout of common load balancers, which then never reuse a connection being closed)"`
	HeaderTimeout time.Duration `name:"read-header-timeout" group:"http" env:"CATALOGSYNC_READ_HEADER_TIMEOUT" default:"10s" check:"positive" help:"longest time to read a request's headers, the TLS handshake included"`
}

// Address is the listen address of the commands that serve HTTP.
type Address struct {
	Addr string `name:"addr" group:"http" env:"CATALOGSYNC_ADDR,PORT" default:":8080" help:"listen address (PORT=n gives :n)"`
}

// Serving are the settings of a catalog server's HTTP side: its address,
// connections, timeouts, TLS and GraphQL budget.
type Serving struct {
	Address         `embed:""`
	Listening       `embed:""`
	WriteStall      time.Duration `name:"write-stall-timeout" group:"http" env:"CATALOGSYNC_WRITE_STALL_TIMEOUT" default:"1m" check:"nonneg" help:"a response that makes no progress this long (a client that stopped reading) is abandoned; slow readers that keep reading are fine (0: never)"`
	ReadLimit       time.Duration `name:"read-timeout" group:"http" env:"CATALOGSYNC_READ_TIMEOUT" default:"30s" check:"nonneg" help:"longest time to read a request, body included (a client trickling a webhook body is cut off)"`
	ShutdownGrace   time.Duration `name:"shutdown-grace" group:"http" env:"CATALOGSYNC_SHUTDOWN_GRACE" default:"10s" check:"nonneg" help:"how long requests in flight may run on after SIGTERM before their connections are closed; a second signal exits at once"`
	TLSCert         string        `name:"tls-cert-file" group:"access" env:"CATALOGSYNC_TLS_CERT_FILE" help:"serve HTTPS with this PEM certificate, reloaded when the file changes (cert-manager, OpenShift service CA)"`
	TLSKey          string        `name:"tls-key-file" group:"access" env:"CATALOGSYNC_TLS_KEY_FILE" help:"PEM key of --tls-cert-file"`
	TLSClientCA     string        `name:"tls-client-ca-file" group:"access" env:"CATALOGSYNC_TLS_CLIENT_CA_FILE" help:"mutual TLS: a client certificate signed by this CA is required for everything but catalog content (/catalogs/), /healthz, /readyz and the webhook and event receivers (see --ui-open)"`
	TLSProfile      string        `name:"tls-profile" group:"access" env:"CATALOGSYNC_TLS_PROFILE" default:"intermediate" help:"versions and ciphers offered, as catalogd's --tls-profile: intermediate (TLS 1.2 with forward-secret AEAD ciphers, and 1.3), modern (TLS 1.3 only) or custom (--tls-custom-version and --tls-custom-ciphers)"`
	TLSCustomMin    string        `name:"tls-custom-version" group:"access" env:"CATALOGSYNC_TLS_CUSTOM_VERSION" docdefault:"TLSv1.2" help:"with --tls-profile custom: the minimum version, TLSv1.2 or TLSv1.3"`
	TLSCustomCipher string        `name:"tls-custom-ciphers" group:"access" env:"CATALOGSYNC_TLS_CUSTOM_CIPHERS" docdefault:"intermediate's" help:"with --tls-profile custom: comma-separated TLS 1.2 cipher suites by Go's names (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); TLS 1.3's are always offered"`
	GraphQLAnswer   string        `name:"graphql-max-answer" group:"http" env:"CATALOGSYNC_GRAPHQL_MAX_ANSWER" default:"16Mi" check:"bytes" help:"a GraphQL query whose answer could be larger (worst case, from the index) is refused: bytes, or with K/M/Ki/Mi"`
	GraphQLInflight string        `name:"graphql-answers-in-flight" group:"http" env:"CATALOGSYNC_GRAPHQL_ANSWERS_IN_FLIGHT" default:"32Mi" check:"bytes" help:"worst-case answers of the GraphQL queries running at once; more wait, up to the query timeout, then get 503 (an answer takes about 4 times its size in memory)"`
}

// GraphQLBudget is the answer budget the settings give (checked at parse).
func (s Serving) GraphQLBudget() (perQuery, inflight int64) {
	perQuery, _ = ParseBytes(s.GraphQLAnswer)
	inflight, _ = ParseBytes(s.GraphQLInflight)
	return perQuery, inflight
}

// HTTP is the servers' configuration the settings give; open says which
// requests need no client certificate with --tls-client-ca-file.
func (s Serving) HTTP(open func(*http.Request) bool) (httpserver.Config, error) {
	c := httpserver.Config{MaxConns: s.MaxConns, IdleTimeout: s.IdleTimeout, HeaderTimeout: s.HeaderTimeout,
		ReadTimeout: s.ReadLimit, WriteStall: s.WriteStall, OpenWithoutCert: open,
		TLS: tlsreload.Files{Cert: s.TLSCert, Key: s.TLSKey, ClientCA: s.TLSClientCA}}
	var err error
	if c.Profile, err = tlsprofile.Parse(s.TLSProfile, s.TLSCustomMin, s.TLSCustomCipher); err != nil {
		return c, UsageError{Msg: fmt.Sprintf("%v (--tls-profile %s)", err, s.TLSProfile)}
	}
	if s.TLSCert == "" && (s.TLSProfile != "intermediate" || s.TLSCustomMin != "" || s.TLSCustomCipher != "") {
		// Ignoring the profile would serve plain HTTP to someone who asked for TLS 1.3.
		return c, UsageError{Msg: "--tls-profile and --tls-custom-* apply to HTTPS: give --tls-cert-file and --tls-key-file too"}
	}
	return c, nil
}

// Reader is catalogsync-reader's whole command line: every setting is one
// serve takes too.
type Reader struct {
	Storage `embed:"" group:"store"`
	Serving `embed:""`
	Logging `embed:""`
}
