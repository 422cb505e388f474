package main

// Every setting of the command is declared once, as a field of the structs
// below: its flag name, environment variable(s) (env, first non-empty
// wins), config-file key (file), default, help and check. The README's
// configuration table is generated from them (docs.go).
//
// One precedence rule, whatever the setting: flag > env > file > default.
// A flag given on the command line is known to be set even when its value
// equals the default, so `--platform linux/amd64` beats the file. Every
// value that does not parse or fails its check stops the start with exit
// code 2, naming the setting and where the value came from.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"
	"github.com/regclient/regclient/types/platform"

	"github.com/catalogsync/catalogsync/internal/pullsecret"
	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/follow"
	"github.com/catalogsync/catalogsync/sync/source"
)

// cli is the command line: one field per subcommand.
// Each names itself (name:), which oneCommand reads.
type cli struct {
	Sync  syncCmd  `cmd:"" name:"sync" help:"Sync one catalog and exit."`
	Serve serveCmd `cmd:"" name:"serve" help:"Keep catalogs synced and serve them."`
	Poll  pollCmd  `cmd:"" name:"poll" help:"Sync the catalogs that are due, then exit (CronJob)."`
	GC    gcCmd    `cmd:"" name:"gc" help:"Delete content no longer needed."`
	Index indexCmd `cmd:"" name:"index" help:"Validate an FBC directory and pre-build its catalog and index."`
	Agent agentCmd `cmd:"" name:"agent" help:"Write a member cluster's ClusterCatalog status from a store another deployment syncs."`
	Docs  docsCmd  `cmd:"" name:"docs" hidden:"" help:"Print, or write into docs/settings.md, the configuration table."`
	// Version prints the build's version, revision and Go version.
	Version versionCmd `cmd:"" name:"version" help:"Print the version, VCS revision and time, and Go version."`
}

// logFlags: every command that logs.
type logFlags struct {
	LogLevel string `name:"log-level" group:"log" env:"CATALOGSYNC_LOG_LEVEL" default:"info" check:"loglevel" help:"debug, info, warn or error"`
}

// storeFlags select the store: a local directory or an S3 bucket.
type storeFlags struct {
	Store string  `name:"store" env:"CATALOGSYNC_STORE" file:"storage.dir" docdefault:"${defaultStore}" help:"local store directory"`
	S3    s3Flags `embed:""`
}

// s3Flags are the --s3-* flags. Credentials come from storage/s3's chain
// (AWS_ACCESS_KEY_ID, web identity, container and instance roles, ...),
// never from flags.
type s3Flags struct {
	Bucket       string        `name:"s3-bucket" env:"CATALOGSYNC_S3_BUCKET" help:"store catalogs in this S3/MinIO bucket instead of --store"`
	Endpoint     string        `name:"s3-endpoint" env:"CATALOGSYNC_S3_ENDPOINT" docdefault:"AWS" help:"endpoint override (MinIO: http://host:9000)"`
	Region       string        `name:"s3-region" env:"CATALOGSYNC_S3_REGION" docdefault:"AWS_REGION" help:"region (else AWS_REGION, AWS_DEFAULT_REGION; us-east-1 with --s3-endpoint)"`
	Prefix       string        `name:"s3-prefix" env:"CATALOGSYNC_S3_PREFIX" help:"key prefix, so several deployments share a bucket"`
	PathStyle    bool          `name:"s3-path-style" env:"CATALOGSYNC_S3_PATH_STYLE" help:"path-style addressing (MinIO)"`
	Concurrency  int           `name:"s3-upload-concurrency" env:"CATALOGSYNC_S3_UPLOAD_CONCURRENCY" defaultvar:"s3Concurrency" check:"positive" help:"parts of one upload sent at once, each 5 MiB of a scratch file in --tmp-dir (more for a far S3)"`
	StallTimeout time.Duration `name:"s3-stall-timeout" env:"CATALOGSYNC_S3_STALL_TIMEOUT" defaultvar:"s3Stall" check:"nonneg" help:"a store that sends nothing this long (no response, no byte either way) fails the request; slow transfers are fine"`
}

func (f s3Flags) config() s3.Config {
	return s3.Config{Bucket: f.Bucket, Endpoint: f.Endpoint, Region: f.Region, Prefix: f.Prefix, PathStyle: f.PathStyle, Concurrency: f.Concurrency, StallTimeout: f.StallTimeout}
}

// listenFlags say how serve's listeners (--addr, --events-addr each) hold
// connections, and what clients without a certificate reach when
// --tls-client-ca-file is set. The cap bounds descriptors, goroutines and
// buffers (about 40 KiB an idle TLS connection) well inside a 256Mi pod.
type listenFlags struct {
	MaxConns      int           `name:"max-connections" group:"http" env:"CATALOGSYNC_MAX_CONNECTIONS" default:"512" check:"positive" help:"connections each listener holds open at once; a new one beyond it closes the connection idle longest (between requests, or silent 2s after connecting), or waits in the listen backlog while every one has a request running"`
	IdleTimeout   time.Duration `name:"idle-timeout" group:"http" env:"CATALOGSYNC_IDLE_TIMEOUT" default:"75s" check:"positive" help:"a keep-alive connection with no new request this long is closed (above the 60s idle timeout of common load balancers, which then never reuse a connection being closed)"`
	HeaderTimeout time.Duration `name:"read-header-timeout" group:"http" env:"CATALOGSYNC_READ_HEADER_TIMEOUT" default:"10s" check:"positive" help:"longest time to read a request's headers, the TLS handshake included"`
	UIOpen        bool          `name:"ui-open" group:"access" env:"CATALOGSYNC_UI_OPEN" help:"with --tls-client-ca-file, serve the UI (/, /ui/) and the catalog list its live refresh reads (GET /api/v1/catalogs) to clients without a certificate"`
}

// configFlag names the catalogs file. load reads it, once: the resolver's
// reading of storage.dir and platform is that one.
type configFlag struct {
	Config string `name:"config" group:"catalogs" env:"CATALOGSYNC_CONFIG" help:"catalogs file (YAML)"`

	loaded *loadedConfig
}

// commonFlags configure how images are read, for the commands that sync.
type commonFlags struct {
	storeFlags  `embed:"" group:"store"`
	Platform    string `name:"platform" group:"registries" env:"CATALOGSYNC_PLATFORM" file:"platform" default:"linux/amd64" check:"platform" help:"manifest picked from multi-platform images (os/arch[/variant])"`
	PlainHTTP   string `name:"plain-http" group:"registries" env:"CATALOGSYNC_PLAIN_HTTP" help:"comma-separated registry hosts reached over plain HTTP"`
	Insecure    string `name:"insecure-skip-tls-verify" group:"registries" env:"CATALOGSYNC_INSECURE_HOSTS" help:"comma-separated registry hosts whose TLS certificate is not verified"`
	CAFile      string `name:"ca-file" group:"registries" env:"CATALOGSYNC_CA_FILE" help:"PEM CA bundle trusted for every registry besides the system's; re-read when it changes"`
	CADir       string `name:"ca-dir" group:"registries" env:"CATALOGSYNC_CA_DIR" help:"directory of PEM CA files (ending .crt or .pem) trusted for every registry, as catalogd's --pull-cas-dir; re-read when it changes"`
	RegConf     string `name:"registries-conf" group:"registries" env:"CATALOGSYNC_REGISTRIES_CONF" defaultvar:"regconf" docdefault:"${regconf} when present" help:"containers registries.conf v2 (+ .d drop-ins): mirrors tried in order, then the source; blocked registries refused; \"\" reads none"`
	logFlags    `embed:""`
	TmpDir      string        `name:"tmp-dir" group:"syncs" env:"CATALOGSYNC_TMP_DIR" docdefault:"system temp" help:"directory for the spool file while a sync runs, and for the parts of S3 uploads (unlinked files)"`
	NoDocker    bool          `name:"no-docker-config" group:"registries" help:"do not read registry credentials from the docker config"`
	VerifyReuse bool          `name:"verify-incremental" group:"syncs" env:"CATALOGSYNC_VERIFY_INCREMENTAL" help:"parse the files an incremental sync reuses from the published content too, and fail the sync if anything differs (the test suite runs with it; it costs the speed-up)"`
	Stall       time.Duration `name:"stall-timeout" group:"registries" env:"CATALOGSYNC_STALL_TIMEOUT" defaultvar:"stall" check:"nonneg" help:"a registry that sends nothing this long (no response, no byte of a layer) fails the attempt, which is retried; slow transfers are fine"`
	Static      bool          `name:"static-layout" group:"store" env:"CATALOGSYNC_STATIC_LAYOUT" help:"with every publish also write catalogs/<name>/api/v1/all and all.gz in the store, so HTTP clients read catalogs straight from the bucket (point --base-url at it); content is then stored whole, not shared between digests"`
	Replica     string        `name:"replica-id" group:"syncs" env:"CATALOGSYNC_REPLICA_ID,POD_NAME" docdefault:"the host name" help:"this replica's name in the store's leases and logs (replicas sharing a store pull each digest once, and take turns at GC and polls) and in the field manager of the Progressing condition it writes (catalogsync/<id>); unique per replica; a lease belongs to one process whatever its name"`

	// noLocal refuses ocidir:// references (serve, for ClusterCatalogs).
	noLocal bool
	// creds are extra registry credentials (serve: the pull secret).
	creds source.CredentialProvider
	// mirrors, when set, replace --registries-conf's rules (serve: the file's merged with the cluster's mirror sets).
	mirrors source.Mirrors
	// sigs require signatures (the config file's signaturePolicy and
	// catalogs' signature).
	sigs signatures
}

// Settings read from the environment only: a flag would show in ps, or
// the value is needed before the command line is read.
const (
	envAPIToken = "CATALOGSYNC_API_TOKEN" //nolint:gosec // G101: the name of the variable, not a token
	envMemLimit = "GOMEMLIMIT"
	envPeakRSS  = "CATALOGSYNC_PRINT_PEAK_RSS"
	// envNotifyToken is the agent's bucket notification token.
	envNotifyToken = "CATALOGSYNC_NOTIFY_TOKEN" //nolint:gosec // G101: the name of the variable, not a token
)

// envOnly declares them, for envValue, the help and the table.
var envOnly = []struct{ Env, Cmd, Help string }{
	{envAPIToken, "serve", "bearer token required by `POST /api/v1/...` (reads stay open); without it POST is refused unless `--api-open`"},
	{envMemLimit, "sync", "Go's soft memory limit; sync sets " + fmt.Sprint(defaultSyncMemoryLimit>>20) + "MiB when it is unset"},
	{envPeakRSS, "any", "set: print the process's peak memory on exit, for the benchmarks"},
	{envNotifyToken, "agent", "token bucket notifications to `/events` must carry (`Authorization: Bearer <token>`, as MinIO's webhook `auth_token` sends it); without it notifications are refused unless `--notify-open`, and pointers are polled"},
}

// envValue is the value of an env-only setting, which envOnly declares.
func envValue(name string) string {
	if !slices.ContainsFunc(envOnly, func(e struct{ Env, Cmd, Help string }) bool { return e.Env == name }) {
		panic("env-only setting " + name + " is not declared in envOnly")
	}
	return os.Getenv(name)
}

// fromEnv resolves "env:NAME" to the variable's value, so secrets can come
// from a Kubernetes Secret through the environment instead of the file.
func fromEnv(v string) (string, error) {
	name, ok := strings.CutPrefix(v, "env:")
	if !ok {
		return v, nil
	}
	val, set := os.LookupEnv(name)
	if !set || val == "" {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return val, nil
}

// fileOnly are config-file keys with no flag, for the table.
var fileOnly = []struct{ Key, Help string }{
	{"registries[].caFile, username, password", "per-host CA bundle and credentials (`env:NAME` allowed), over the pull secret's"},
	{"signaturePolicy: [{name, prefix, keys/keyless}]", "images under `prefix` must be signed by one of the PEM public `keys` (cosign tag `sha256-<hex>.sig` or a sigstore bundle referrer) or, `keyless: {trustedRoot, identity/identityRegexp, issuer/issuerRegexp, ignoreTlog}`, by a certificate for that identity; otherwise the sync is terminal and the old catalog stays"},
	{"catalogs[].signature: {rule/keys/keyless}", "the catalog's own signature requirement (a named rule, or inline); it wins over the prefix rules"},
}

// vars are the defaults the declarations take from the packages'
// constants: a flag's defaultvar tag names one, and docdefault's words
// may say ${name}. The resolver applies them rather than kong's own
// ${var} defaults, whose interpolation ran a regexp for every variable
// of every flag: 1.1 of serve's 2.6 ms parse, 40% of its allocations.
// Built once: a parse asks for each flag's default.
var vars = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"defaultStore":  defaultStore,
		"s3Stall":       shortDuration(s3.DefaultStallTimeout),
		"s3Concurrency": fmt.Sprint(s3.DefaultConcurrency),
		"stall":         shortDuration(source.DefaultStallTimeout),
		"regconf":       regconf.DefaultPath,
		"keep":          fmt.Sprint(catalog.DefaultKeep),
		"grace":         shortDuration(catalog.DefaultGrace),
		"unconfigured":  shortDuration(catalog.DefaultUnconfiguredAge),
		"leftover":      shortDuration(catalog.DefaultLeftoverAge),
		"pointerPoll":   shortDuration(follow.DefaultPollInterval),
	}
})

// shortDuration prints 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Where a value came from, for messages.
const (
	originFlag    = "flag"
	originEnv     = "env"
	originFile    = "file"
	originDefault = "default"
)

// origins records, per flag name, where its value came from ("env NAME",
// "file key KEY", "default"); a flag not in it was given on the command
// line.
type origins map[string]string

func (o origins) of(name string) string {
	if v, ok := o[name]; ok {
		return v
	}
	return originFlag + " --" + name
}

// envForm adapts variables whose value is not the flag's own form.
var envForm = map[string]func(string) string{
	"PORT": func(v string) string { return ":" + v },
}

// resolver supplies, for each flag not given on the command line, its
// environment value, else its config-file value, else its default; it
// checks that the value parses, so the error can say where it came from.
type resolver struct {
	from origins
	// loaded is the config file, read at the first setting it may hold;
	// the command is handed it (parseInto).
	loaded *loadedConfig
}

func (r *resolver) Validate(*kong.Application) error { return nil }

func (r *resolver) Resolve(kctx *kong.Context, _ *kong.Path, f *kong.Flag) (any, error) {
	for _, env := range f.Envs {
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			continue // set but empty counts as unset, as it always did
		}
		if form := envForm[env]; form != nil {
			v = form(v)
		}
		return r.use(f, v, originEnv+" "+env)
	}
	if key := f.Tag.Get("file"); key != "" {
		if v, ok := r.fileValue(kctx, key); ok {
			return r.use(f, v, originFile+" key "+key)
		}
	}
	r.from[f.Name] = originDefault
	if d, ok := flagDefault(f.Value); ok {
		// Undo what kong took from an empty variable.
		return d, nil
	}
	return nil, nil
}

// flagDefault is a flag's default: its defaultvar's value, else kong's.
func flagDefault(v *kong.Value) (string, bool) {
	if name := v.Tag.Get("defaultvar"); name != "" {
		d, ok := vars()[name]
		return d, ok
	}
	return v.Default, v.HasDefault
}

func (r *resolver) use(f *kong.Flag, v, from string) (any, error) {
	r.from[f.Name] = from
	scratch := reflect.New(f.Target.Type()).Elem()
	if err := f.Parse(kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: v}), scratch); err != nil {
		return nil, fmt.Errorf("%w (from %s=%q)", errors.Unwrap(err), from, v)
	}
	return v, nil
}

// fileValue looks key (dotted, its JSON names) up in the config file
// that --config names. A file that does not load gives nothing here: the
// command reports why when it uses the file.
func (r *resolver) fileValue(kctx *kong.Context, key string) (string, bool) {
	if r.loaded == nil {
		path := configPath(kctx)
		if path == "" {
			return "", false
		}
		r.loaded = loadOnce(path)
	}
	if r.loaded.err != nil {
		return "", false
	}
	return fileSetting(r.loaded.cfg, key)
}

// fileSetting is the value of the config file's key, a path of JSON field
// names; ok is false for a key it leaves empty.
func fileSetting(c Config, key string) (string, bool) {
	v := reflect.ValueOf(c)
	for _, k := range strings.Split(key, ".") {
		i := slices.IndexFunc(reflect.VisibleFields(v.Type()), func(f reflect.StructField) bool {
			return strings.Split(f.Tag.Get("json"), ",")[0] == k
		})
		if i < 0 {
			panic("config file key " + key + " is no field of Config")
		}
		v = v.Field(i)
	}
	if v.IsZero() {
		return "", false
	}
	return fmt.Sprint(v.Interface()), true
}

// configPath is --config's value, from the command line or else the
// environment (kong has set it from there before resolving).
func configPath(kctx *kong.Context) string {
	for _, f := range kctx.Flags() {
		if f.Name == "config" {
			s, _ := kctx.FlagValue(f).(string)
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// checks are the value checks a declaration names with check:"...".
var checks = map[string]func(v any) error{
	"nonneg": func(v any) error {
		if sign(v) < 0 {
			return errors.New("must not be negative")
		}
		return nil
	},
	"positive": func(v any) error {
		if sign(v) <= 0 {
			return errors.New("must be positive")
		}
		return nil
	},
	"loglevel": func(v any) error {
		var l slog.Level
		return l.UnmarshalText([]byte(v.(string)))
	},
	"platform": func(v any) error {
		if _, err := platform.Parse(v.(string)); err != nil || !strings.Contains(v.(string), "/") {
			return fmt.Errorf("invalid platform %q: want os/arch[/variant]", v)
		}
		return nil
	},
	"bytes": func(v any) error {
		_, err := parseBytes(v.(string))
		return err
	},
	"nsname": func(v any) error {
		if v.(string) == "" {
			return nil
		}
		_, _, err := pullsecret.ParseName(v.(string))
		return err
	},
	"httpurl": func(v any) error {
		s := v.(string)
		if s == "" {
			return nil
		}
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an absolute http(s) URL", s)
		}
		return nil
	},
}

func sign(v any) int {
	var f float64
	switch v := v.(type) {
	case int:
		f = float64(v)
	case float64:
		f = v
	case time.Duration:
		f = float64(v)
	default:
		panic(fmt.Sprintf("check of a %T", v))
	}
	switch {
	case f < 0:
		return -1
	case f > 0:
		return 1
	}
	return 0
}

// errExit carries the code kong asks to exit with (help: 0).
type errExit int

func (e errExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// newParser builds the command line for target (a *cli, or oneCommand's
// struct), writing help to stdout.
func newParser(target any, stdout, stderr io.Writer) (*kong.Kong, *resolver, error) {
	r := &resolver{from: origins{}}
	k, err := kong.New(target,
		kong.Name("catalogsync"),
		kong.Description("Sync Operator catalogs from OCI images into object storage and serve them."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(errExit(code)) }),
		kong.Resolvers(r),
		kong.ExplicitGroups(flagGroups),
		kong.Help(printHelp),
	)
	return k, r, err
}

// parse parses args into c and checks every value; the origins say where
// each value came from. When args name a command first, only that
// command's grammar is built: every process start pays for building it,
// and the whole grammar took 4.6 ms and 1.4 MB against 1.0 ms and 0.3 MB
// for sync's alone. The answers are the same (TestOneCommandParsesAsAll).
func parse(c *cli, args []string, stdout, stderr io.Writer) (*kong.Context, origins, error) {
	one, commit, ok := oneCommand(c, args)
	if !ok {
		return parseInto(c, args, stdout, stderr)
	}
	kctx, from, err := parseInto(one, args, stdout, stderr)
	if err == nil {
		commit()
	}
	return kctx, from, err
}

// oneCommand returns a struct whose one field is the command args[0]
// names, as cli declares it, and commit, which copies that field into c.
func oneCommand(c *cli, args []string) (one any, commit func(), ok bool) {
	if len(args) == 0 {
		return nil, nil, false
	}
	t := reflect.TypeFor[cli]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("name") != args[0] {
			continue
		}
		v := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}}))
		return v.Interface(), func() { reflect.ValueOf(c).Elem().Field(i).Set(v.Elem().Field(0)) }, true
	}
	return nil, nil, false
}

// parseInto parses args into target (see newParser) and checks every
// value.
func parseInto(target any, args []string, stdout, stderr io.Writer) (*kong.Context, origins, error) {
	k, r, err := newParser(target, stdout, stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCommand(k, args); err != nil {
		return nil, nil, err
	}
	kctx, err := k.Parse(args)
	if err == nil {
		handConfig(kctx, r.loaded)
	}
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "(from ") {
			msg += " (from the command line)" // the resolver names env and file
		}
		return nil, nil, usageError{msg}
	}
	for _, f := range kctx.Flags() {
		name := f.Tag.Get("check")
		if name == "" {
			continue
		}
		if err := checks[name](kctx.FlagValue(f)); err != nil {
			return nil, nil, usageError{fmt.Sprintf("--%s: %v (from %s)", f.Name, err, r.from.of(f.Name))}
		}
	}
	return kctx, r.from, nil
}

// checkCommand says what is wrong with a missing or unknown command more
// plainly than the parser.
func checkCommand(k *kong.Kong, args []string) error {
	var names []string
	for _, n := range k.Model.Children {
		if !n.Hidden {
			names = append(names, n.Name)
		}
	}
	const hint = `usage: catalogsync COMMAND [flags], COMMAND one of %s; "catalogsync COMMAND -h" lists a command's flags`
	switch {
	case len(args) == 0:
		return usageError{fmt.Sprintf(hint, strings.Join(names, ", "))}
	case strings.HasPrefix(args[0], "-") || slices.ContainsFunc(k.Model.Children, func(n *kong.Node) bool { return n.Name == args[0] }):
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q; "+hint, args[0], strings.Join(names, ", "))}
}

// pullSecretFlags name the cluster and the pull secret whose credentials
// every command that syncs uses, as serve does.
type pullSecretFlags struct {
	kubeconfigFlag `embed:""`
	PullSecret     string `name:"pull-secret" group:"registries" env:"CATALOGSYNC_PULL_SECRET" check:"nsname" help:"namespace/name of a kubernetes.io/dockerconfigjson Secret whose registry credentials are used over the docker config's, followed as it changes"`
}

// mirrorSetFlags: serve's OpenShift image mirror sets (docs/registries.md).
type mirrorSetFlags struct {
	NoMirrorSets bool `name:"no-image-mirror-sets" group:"registries" env:"CATALOGSYNC_NO_IMAGE_MIRROR_SETS" help:"with --clustercatalogs, do not follow the cluster's ImageDigestMirrorSets and ImageTagMirrorSets (followed by default when the cluster serves them, merged after --registries-conf)"`
}

// kubeconfigFlag names the cluster of the commands that use one.
type kubeconfigFlag struct {
	Kubeconfig string `name:"kubeconfig" group:"catalogs" env:"KUBECONFIG" docdefault:"in-cluster" help:"kubeconfig for --clustercatalogs, --pull-secret, events.audience and agent"`
}

// addrFlag is the listen address of the commands that serve HTTP.
type addrFlag struct {
	Addr string `name:"addr" group:"http" env:"CATALOGSYNC_ADDR,PORT" default:":8080" help:"listen address (PORT=n gives :n)"`
}

// baseURLFlag is where catalogs are read from, for ClusterCatalog status.
type baseURLFlag struct {
	BaseURL string `name:"base-url" group:"catalogs" env:"CATALOGSYNC_BASE_URL" docdefault:"from the request" help:"external base URL catalogs are read from, for the serving URLs reported (status.urls.base is it + /catalogs/<name>): serve's own, or for agent the bucket's (endpoint/bucket[/prefix]) or a CDN's"`
}
