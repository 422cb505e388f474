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
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"
	"github.com/regclient/regclient/types/platform"

	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/internal/pullsecret"
	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/storage/s3"
	"github.com/catalogsync/catalogsync/sync/follow"
	"github.com/catalogsync/catalogsync/sync/source"
)

// commands is the command line: one field per subcommand.
// Each names itself (name:), which oneCommand reads.
type commands struct {
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

// configFlag names the catalogs file. load reads it, once: the resolver's
// reading of storage.dir and platform is that one.
type configFlag struct {
	Config string `name:"config" group:"catalogs" env:"CATALOGSYNC_CONFIG" help:"catalogs file (YAML)"`

	loaded *loadedConfig
}

// commonFlags configure how images are read, for the commands that sync.
type commonFlags struct {
	cli.Storage `embed:"" group:"store"`
	// S3Concurrency is the store setting only the commands that upload take.
	S3Concurrency int    `name:"s3-upload-concurrency" group:"store" env:"CATALOGSYNC_S3_UPLOAD_CONCURRENCY" defaultvar:"s3Concurrency" check:"positive" help:"parts of one upload sent at once, each 5 MiB of a scratch file in --tmp-dir (more for a far S3)"`
	Platform      string `name:"platform" group:"registries" env:"CATALOGSYNC_PLATFORM" file:"platform" default:"linux/amd64" check:"platform" help:"manifest picked from multi-platform images (os/arch[/variant])"`
	PlainHTTP     string `name:"plain-http" group:"registries" env:"CATALOGSYNC_PLAIN_HTTP" help:"comma-separated registry hosts reached over plain HTTP"`
	Insecure      string `name:"insecure-skip-tls-verify" group:"registries" env:"CATALOGSYNC_INSECURE_HOSTS" help:"comma-separated registry hosts whose TLS certificate is not verified"`
	CAFile        string `name:"ca-file" group:"registries" env:"CATALOGSYNC_CA_FILE" help:"PEM CA bundle trusted for every registry besides the system's; re-read when it changes"`
	CADir         string `name:"ca-dir" group:"registries" env:"CATALOGSYNC_CA_DIR" help:"directory of PEM CA files (ending .crt or .pem) trusted for every registry, as catalogd's --pull-cas-dir; re-read when it changes"`
	RegConf       string `name:"registries-conf" group:"registries" env:"CATALOGSYNC_REGISTRIES_CONF" defaultvar:"regconf" docdefault:"${regconf} when present" help:"containers registries.conf v2 (+ .d drop-ins): mirrors tried in order, then the source; blocked registries refused; \"\" reads none"`
	cli.Logging   `embed:""`
	TmpDir        string        `name:"tmp-dir" group:"syncs" env:"CATALOGSYNC_TMP_DIR" docdefault:"system temp" help:"directory for the spool file while a sync runs, and for the parts of S3 uploads (unlinked files)"`
	NoDocker      bool          `name:"no-docker-config" group:"registries" help:"do not read registry credentials from the docker config"`
	VerifyReuse   bool          `name:"verify-incremental" group:"syncs" env:"CATALOGSYNC_VERIFY_INCREMENTAL" help:"parse the files an incremental sync reuses from the published content too, and fail the sync if anything differs (the test suite runs with it; it costs the speed-up)"`
	Stall         time.Duration `name:"stall-timeout" group:"registries" env:"CATALOGSYNC_STALL_TIMEOUT" defaultvar:"stall" check:"nonneg" help:"a registry that sends nothing this long (no response, no byte of a layer) fails the attempt, which is retried; slow transfers are fine"`
	Static        bool          `name:"static-layout" group:"store" env:"CATALOGSYNC_STATIC_LAYOUT" help:"with every publish also write catalogs/<name>/api/v1/all and all.gz in the store, so HTTP clients read catalogs straight from the bucket (point --base-url at it); content is then stored whole, not shared between digests"`
	Replica       string        `name:"replica-id" group:"syncs" env:"CATALOGSYNC_REPLICA_ID,POD_NAME" docdefault:"the host name" help:"this replica's name in the store's leases and logs (replicas sharing a store pull each digest once, and take turns at GC and polls) and in the field manager of the Progressing condition it writes (catalogsync/<id>); unique per replica; a lease belongs to one process whatever its name"`

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
var envOnly = []cli.EnvOnly{
	{Env: envAPIToken, Cmd: "serve", Help: "bearer token required by `POST /api/v1/...` (reads stay open); without it POST is refused unless `--api-open`"},
	{Env: envMemLimit, Cmd: "sync", Help: "Go's soft memory limit; sync sets " + fmt.Sprint(defaultSyncMemoryLimit>>20) + "MiB when it is unset"},
	{Env: envPeakRSS, Cmd: "any", Help: "set: print the process's peak memory on exit, for the benchmarks"},
	{Env: envNotifyToken, Cmd: "agent", Help: "token bucket notifications to `/events` must carry (`Authorization: Bearer <token>`, as MinIO's webhook `auth_token` sends it); without it notifications are refused unless `--notify-open`, and pointers are polled"},
}

// envValue is the value of an env-only setting, which envOnly declares.
func envValue(name string) string {
	if !slices.ContainsFunc(envOnly, func(e cli.EnvOnly) bool { return e.Env == name }) {
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

// vars are the defaults this command line's declarations take from the
// packages' constants (on top of internal/cli's): a flag's defaultvar tag
// names one, and docdefault's words may say ${name}. Built once: a parse
// asks for each flag's default.
var vars = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"stall":         cli.ShortDuration(source.DefaultStallTimeout),
		"s3Concurrency": fmt.Sprint(s3.DefaultConcurrency),
		"regconf":       regconf.DefaultPath,
		"keep":          fmt.Sprint(catalog.DefaultKeep),
		"grace":         cli.ShortDuration(catalog.DefaultGrace),
		"unconfigured":  cli.ShortDuration(catalog.DefaultUnconfiguredAge),
		"leftover":      cli.ShortDuration(catalog.DefaultLeftoverAge),
		"pointerPoll":   cli.ShortDuration(follow.DefaultPollInterval),
	}
})

// checks are the value checks of this command line's declarations (on
// top of internal/cli's).
var checks = map[string]func(v any) error{
	"platform": func(v any) error {
		if _, err := platform.Parse(v.(string)); err != nil || !strings.Contains(v.(string), "/") {
			return fmt.Errorf("invalid platform %q: want os/arch[/variant]", v)
		}
		return nil
	},
	"nsname": func(v any) error {
		if v.(string) == "" {
			return nil
		}
		_, _, err := pullsecret.ParseName(v.(string))
		return err
	},
}

// options are catalogsync's command line; loaded receives the config
// file, read at the first setting it may hold.
func options(loaded **loadedConfig) cli.Options {
	return cli.Options{
		Name:        "catalogsync",
		Description: "Sync Operator catalogs from OCI images into object storage and serve them.",
		Groups:      flagGroups,
		Vars:        vars,
		Checks:      checks,
		EnvOnly:     envOnly,
		File: func(kctx *kong.Context, key string) (string, bool) {
			return fileValue(kctx, loaded, key)
		},
	}
}

// fileValue looks key (dotted, its JSON names) up in the config file
// that --config names. A file that does not load gives nothing here: the
// command reports why when it uses the file.
func fileValue(kctx *kong.Context, loaded **loadedConfig, key string) (string, bool) {
	if *loaded == nil {
		path := configPath(kctx)
		if path == "" {
			return "", false
		}
		*loaded = loadOnce(path)
	}
	if (*loaded).err != nil {
		return "", false
	}
	return fileSetting((*loaded).cfg, key)
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

// newParser builds the command line for target (a *commands, or
// oneCommand's struct), writing help to stdout.
func newParser(target any, stdout, stderr io.Writer) (*kong.Kong, origins, error) {
	var loaded *loadedConfig
	return cli.NewParser(target, stdout, stderr, options(&loaded))
}

// parse parses args into c and checks every value; the origins say where
// each value came from. When args name a command first, only that
// command's grammar is built: every process start pays for building it,
// and the whole grammar took 4.6 ms and 1.4 MB against 1.0 ms and 0.3 MB
// for sync's alone. The answers are the same (TestOneCommandParsesAsAll).
func parse(c *commands, args []string, stdout, stderr io.Writer) (*kong.Context, origins, error) {
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
// names, as commands declares it, and commit, which copies that field
// into c.
func oneCommand(c *commands, args []string) (one any, commit func(), ok bool) {
	if len(args) == 0 {
		return nil, nil, false
	}
	t := reflect.TypeFor[commands]()
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

// parseInto parses args into target (see newParser), checks every value
// and hands the command the config file the parse read.
func parseInto(target any, args []string, stdout, stderr io.Writer) (*kong.Context, origins, error) {
	var loaded *loadedConfig
	kctx, from, err := cli.Parse(target, args, stdout, stderr, options(&loaded))
	if err == nil {
		handConfig(kctx, loaded)
	}
	return kctx, from, err
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

// baseURLFlag is where catalogs are read from, for ClusterCatalog status.
type baseURLFlag struct {
	BaseURL string `name:"base-url" group:"catalogs" env:"CATALOGSYNC_BASE_URL" docdefault:"from the request" help:"external base URL catalogs are read from, for the serving URLs reported (status.urls.base is it + /catalogs/<name>): serve's own, or for agent the bucket's (endpoint/bucket[/prefix]) or a CDN's"`
}
