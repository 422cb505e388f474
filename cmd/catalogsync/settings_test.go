package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/catalogsync/catalogsync/internal/cli"
	"github.com/catalogsync/catalogsync/storage/s3"
)

// parseArgs parses args as the command does, without running anything.
func parseArgs(t *testing.T, args ...string) (*commands, origins, error) {
	t.Helper()
	var c commands
	_, from, err := parse(&c, args, io.Discard, io.Discard)
	return &c, from, err
}

// fileWith writes a config file with the given top-level YAML.
func fileWith(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalogsync.yaml")
	if err := os.WriteFile(p, []byte(yaml+"\ncatalogs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// unsetEnv keeps the caller's environment out of a test's precedence.
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}

func wantPlatform(t *testing.T, args []string, want, wantFrom string) {
	t.Helper()
	c, from, err := parseArgs(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.Platform != want || !strings.HasPrefix(from.Of("platform"), wantFrom) {
		t.Fatalf("platform %q from %q, want %q from %s", c.Serve.Platform, from.Of("platform"), want, wantFrom)
	}
}

func TestFlagBeatsEnv(t *testing.T) {
	t.Setenv("CATALOGSYNC_PLATFORM", "linux/arm64")
	wantPlatform(t, []string{"serve", "--platform", "linux/s390x"}, "linux/s390x", cli.OriginFlag)
}

func TestEnvBeatsFile(t *testing.T) {
	t.Setenv("CATALOGSYNC_PLATFORM", "linux/arm64")
	cfg := fileWith(t, "platform: linux/ppc64le")
	wantPlatform(t, []string{"serve", "--config", cfg}, "linux/arm64", cli.OriginEnv+" CATALOGSYNC_PLATFORM")
}

func TestFileBeatsDefault(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_PLATFORM")
	cfg := fileWith(t, "platform: linux/ppc64le")
	wantPlatform(t, []string{"serve", "--config", cfg}, "linux/ppc64le", cli.OriginFile+" key platform")
}

// The flag's value equals the default, but it was given: it wins.
func TestExplicitDefaultFlagBeatsFile(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_PLATFORM")
	cfg := fileWith(t, "platform: linux/arm64")
	wantPlatform(t, []string{"serve", "--config", cfg, "--platform", "linux/amd64"}, "linux/amd64", cli.OriginFlag)
}

func TestDefaultWhenNothingSet(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_PLATFORM", "CATALOGSYNC_CONFIG")
	wantPlatform(t, []string{"serve"}, "linux/amd64", cli.OriginDefault)
}

// The file named by the environment's CATALOGSYNC_CONFIG is read too.
func TestFileFromEnvConfig(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_PLATFORM", "CATALOGSYNC_STORE")
	t.Setenv("CATALOGSYNC_CONFIG", fileWith(t, "platform: linux/arm64\nstorage:\n  dir: /from/file"))
	c, _, err := parseArgs(t, "poll")
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Platform != "linux/arm64" || c.Poll.Store != "/from/file" {
		t.Fatalf("platform %q store %q", c.Poll.Platform, c.Poll.Store)
	}
}

// A variable set but empty counts as unset, as it always did: deployments
// set some to "" in their env lists.
func TestEmptyEnvIsUnset(t *testing.T) {
	t.Setenv("CATALOGSYNC_PLATFORM", "")
	t.Setenv("CATALOGSYNC_GC_KEEP", "")
	cfg := fileWith(t, "platform: linux/arm64")
	c, _, err := parseArgs(t, "serve", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.Platform != "linux/arm64" || c.Serve.GCKeep != 2 {
		t.Fatalf("platform %q gc-keep %d", c.Serve.Platform, c.Serve.GCKeep)
	}
}

// A setting with several variables takes the first that is set.
func TestEnvNamesInOrder(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_EVENT_SINK", "CATALOGSYNC_ADDR", "CATALOGSYNC_REPLICA_ID")
	t.Setenv("K_SINK", "http://ksink.example.test")
	t.Setenv("PORT", "9090")
	t.Setenv("POD_NAME", "pod-1")
	c, _, err := parseArgs(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.EventSink != "http://ksink.example.test" || c.Serve.Addr != ":9090" || c.Serve.Replica != "pod-1" {
		t.Fatalf("sink %q addr %q replica %q", c.Serve.EventSink, c.Serve.Addr, c.Serve.Replica)
	}
	t.Setenv("CATALOGSYNC_EVENT_SINK", "http://env.example.test")
	t.Setenv("CATALOGSYNC_ADDR", "127.0.0.1:1")
	t.Setenv("CATALOGSYNC_REPLICA_ID", "r-1")
	c, _, err = parseArgs(t, "serve", "--event-sink", "http://flag.example.test")
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.EventSink != "http://flag.example.test" || c.Serve.Addr != "127.0.0.1:1" || c.Serve.Replica != "r-1" {
		t.Fatalf("sink %q addr %q replica %q", c.Serve.EventSink, c.Serve.Addr, c.Serve.Replica)
	}
}

// The config file's store directory gives way to an S3 bucket; one given
// by flag or env conflicts with it.
func TestFileStoreGivesWayToBucket(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_STORE", "CATALOGSYNC_S3_BUCKET")
	cfg := fileWith(t, "storage:\n  dir: /from/file")
	c, from, err := parseArgs(t, "serve", "--config", cfg, "--s3-bucket", "b")
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := c.Serve.LocalDir(from); dir != "" || err != nil {
		t.Fatalf("file dir with a bucket: %q, %v", dir, err)
	}
	c, from, err = parseArgs(t, "serve", "--config", cfg, "--s3-bucket", "b", "--store", "/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Serve.LocalDir(from); err == nil {
		t.Fatal("flag dir and bucket: no conflict")
	}
	c, from, err = parseArgs(t, "serve", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := c.Serve.LocalDir(from); dir != "/from/file" || err != nil {
		t.Fatalf("file dir: %q, %v", dir, err)
	}
}

// Each kind of bad value stops the start with exit 2, naming the setting
// and where the value came from.
func TestBadValues(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_CONFIG", "CATALOGSYNC_PLATFORM")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"int from env", map[string]string{"CATALOGSYNC_GC_KEEP": "two"}, []string{"serve"}, []string{"--gc-keep", "CATALOGSYNC_GC_KEEP"}},
		{"float from env", map[string]string{"CATALOGSYNC_REGISTRY_RATE": "fast"}, []string{"serve"}, []string{"--registry-rate", "CATALOGSYNC_REGISTRY_RATE"}},
		{"duration from flag", nil, []string{"serve", "--poll-check-interval", "soon"}, []string{"--poll-check-interval", "command line"}},
		{"bool from env", map[string]string{"CATALOGSYNC_API_OPEN": "maybe"}, []string{"serve"}, []string{"--api-open", "CATALOGSYNC_API_OPEN"}},
		{"negative from env", map[string]string{"CATALOGSYNC_GC_GRACE": "-1h"}, []string{"serve"}, []string{"--gc-grace", "must not be negative", "env CATALOGSYNC_GC_GRACE"}},
		{"zero from flag", nil, []string{"serve", "--max-concurrent-syncs", "0"}, []string{"--max-concurrent-syncs", "must be positive", "flag --max-concurrent-syncs"}},
		{"enum from env", map[string]string{"CATALOGSYNC_LOG_LEVEL": "loud"}, []string{"sync"}, []string{"--log-level", "env CATALOGSYNC_LOG_LEVEL"}},
		{"platform from file", nil, []string{"serve", "--config", fileWith(t, "platform: nonsense")}, []string{"--platform", "file key platform"}},
		{"url from env", map[string]string{"K_SINK": "sink.example.test"}, []string{"serve"}, []string{"--event-sink", "env K_SINK"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// Cancelled: a value wrongly accepted ends the command at once
			// instead of serving.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stderrb bytes.Buffer
			code := run(ctx, append(tc.args, "--store", t.TempDir()), io.Discard, &stderrb)
			stderr := stderrb.String()
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Fatalf("message lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// garbage returns values that must not be accepted for f: one that does
// not parse as its type, one that fails its check.
func garbage(f *kong.Flag) []string {
	var out []string
	switch f.Target.Type() {
	case reflect.TypeFor[int](), reflect.TypeFor[float64](), reflect.TypeFor[time.Duration](), reflect.TypeFor[bool]():
		out = append(out, "garbage")
	}
	bad := map[string]string{"positive": "0", "loglevel": "loud", "platform": "nonsense", "bytes": "lots", "nsname": "no-namespace", "httpurl": "ftp://x"}
	switch c := f.Tag.Get("check"); {
	case c == "nonneg" && f.Target.Type() == reflect.TypeFor[time.Duration]():
		out = append(out, "-1s")
	case c == "nonneg":
		out = append(out, "-1")
	case c != "":
		out = append(out, bad[c])
	}
	return out
}

// refused reports whether err is a usage error (exit 2) naming all of want.
func refused(err error, want ...string) bool {
	var ue usageError
	if !errors.As(err, &ue) {
		return false
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			return false
		}
	}
	return true
}

// Every setting that is typed or checked refuses garbage, from the
// command line and from each of its variables, naming itself.
func TestEverySettingRefusesGarbage(t *testing.T) {
	k, _, err := newParser(&commands{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	checked := 0
	for _, cmd := range k.Model.Children {
		for _, f := range cmd.Flags {
			if seen[f.Name] || f.Name == "help" {
				continue
			}
			seen[f.Name] = true
			c := f.Tag.Get("check")
			if c != "" && !docOptions.HasCheck(c) {
				t.Errorf("--%s: unknown check %q", f.Name, c)
			}
			if k := f.Target.Kind(); c == "" && (k == reflect.Int || k == reflect.Int64 || k == reflect.Float64) {
				t.Errorf("--%s: a number without a range check", f.Name)
			}
			for _, g := range garbage(f) {
				checked++
				_, _, err := parseArgs(t, cmd.Name, "--"+f.Name+"="+g)
				if !refused(err, "--"+f.Name) {
					t.Errorf("%s --%s=%s: %v", cmd.Name, f.Name, g, err)
				}
				for _, env := range f.Envs {
					t.Setenv(env, g)
					_, _, err := parseArgs(t, cmd.Name)
					os.Unsetenv(env)
					if !refused(err, "--"+f.Name, env) {
						t.Errorf("%s %s=%s: %v", cmd.Name, env, g, err)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d bad values tried", checked)
	}
}

// Every variable the deployment files, the Dockerfile and the old flags
// set is still read.
func TestEnvNamesKept(t *testing.T) {
	k, _, err := newParser(&commands{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{envAPIToken: true, envNotifyToken: true}
	for _, cmd := range k.Model.Children {
		for _, f := range cmd.Flags {
			for _, e := range f.Envs {
				declared[e] = true
			}
		}
	}
	want := strings.Fields(`CATALOGSYNC_STORE CATALOGSYNC_PLATFORM CATALOGSYNC_PLAIN_HTTP CATALOGSYNC_INSECURE_HOSTS
		CATALOGSYNC_TMP_DIR CATALOGSYNC_LOG_LEVEL CATALOGSYNC_STALL_TIMEOUT CATALOGSYNC_CA_FILE CATALOGSYNC_CA_DIR
		CATALOGSYNC_REGISTRIES_CONF CATALOGSYNC_REPLICA_ID POD_NAME CATALOGSYNC_CONFIG CATALOGSYNC_ADDR PORT
		CATALOGSYNC_BASE_URL CATALOGSYNC_MAX_CONCURRENT_SYNCS CATALOGSYNC_REGISTRY_RATE CATALOGSYNC_REGISTRY_BURST
		CATALOGSYNC_POLL_CHECK_INTERVAL CATALOGSYNC_CLUSTERCATALOGS CATALOGSYNC_ALLOW_LOCAL_SOURCES KUBECONFIG
		CATALOGSYNC_PULL_SECRET CATALOGSYNC_EVENT_SINK K_SINK CATALOGSYNC_GC_INTERVAL CATALOGSYNC_SHUTDOWN_GRACE
		CATALOGSYNC_READ_TIMEOUT CATALOGSYNC_API_OPEN CATALOGSYNC_EVENTS_ADDR CATALOGSYNC_WRITE_STALL_TIMEOUT
		CATALOGSYNC_GC_KEEP CATALOGSYNC_GC_UNCONFIGURED_AGE CATALOGSYNC_TLS_CERT_FILE CATALOGSYNC_TLS_KEY_FILE
		CATALOGSYNC_TLS_CLIENT_CA_FILE CATALOGSYNC_GC_GRACE CATALOGSYNC_S3_ENDPOINT CATALOGSYNC_S3_BUCKET
		CATALOGSYNC_S3_REGION CATALOGSYNC_S3_PREFIX CATALOGSYNC_S3_PATH_STYLE CATALOGSYNC_S3_STALL_TIMEOUT`)
	re := regexp.MustCompile(`CATALOGSYNC_[A-Z0-9_]*[A-Z0-9]`)
	for _, glob := range []string{"../../deploy/*/*.yaml", "../../deploy/*/*.env", "../../Dockerfile"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, re.FindAllString(string(b), -1)...)
		}
	}
	for _, e := range want {
		if !declared[e] {
			t.Errorf("%s is no longer read", e)
		}
	}
}

// The settings doc's table is what the declarations generate; run
// `go run ./cmd/catalogsync docs --readme docs/settings.md` after changing
// one.
func TestSettingsTableIsGenerated(t *testing.T) {
	b, err := os.ReadFile("../../" + settingsDoc)
	if err != nil {
		t.Fatal(err)
	}
	table, err := settingsTable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceTable(b, table)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b) {
		t.Fatalf("%s's configuration table differs from the declarations: go run ./cmd/catalogsync docs --readme %[1]s", settingsDoc)
	}
}

// The upload concurrency reaches the store's config, from its default or
// the flag; zero is refused rather than left to the store's default.
func TestS3UploadConcurrency(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_S3_UPLOAD_CONCURRENCY")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"sync"}, s3.DefaultConcurrency},
		{[]string{"sync", "--s3-upload-concurrency", "4"}, 4},
	} {
		c, _, err := parseArgs(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Sync.S3Concurrency; got != tc.want {
			t.Errorf("%v: concurrency %d, want %d", tc.args, got, tc.want)
		}
	}
	if _, _, err := parseArgs(t, "sync", "--s3-upload-concurrency", "0"); err == nil {
		t.Error("--s3-upload-concurrency 0 accepted")
	}
}

// parseOutcome is everything parse decides for args: the settings, their
// origins, the selected command, the error and what was printed.
type parseOutcome struct {
	cmd      any // the selected command's settings
	from     origins
	selected string
	err      string
	printed  string
}

func outcome(args []string, parseFn func(*commands, []string, io.Writer, io.Writer) (*kong.Context, origins, error)) (o parseOutcome) {
	var out bytes.Buffer
	c := &commands{}
	defer func() {
		if r := recover(); r != nil {
			o.err = fmt.Sprint("exit: ", r)
		}
		o.printed = out.String()
	}()
	kctx, from, err := parseFn(c, args, &out, &out)
	o.from = from
	if err != nil {
		o.err = err.Error()
		return o
	}
	o.selected = kctx.Command()
	// The whole grammar also fills the defaults of the commands not
	// selected, which nothing reads.
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("name") == kctx.Selected().Name {
			o.cmd = v.Field(i).Interface()
		}
	}
	return o
}

// Parsing with one command's grammar answers as the whole one does: the
// same settings and origins, the same refusals, the same help.
func TestOneCommandParsesAsAll(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_CONFIG")
	t.Setenv("CATALOGSYNC_LOG_LEVEL", "warn")
	cfg := fileWith(t, "platform: linux/arm64\nstorage:\n  dir: /from/file")
	all := func(c *commands, args []string, stdout, stderr io.Writer) (*kong.Context, origins, error) {
		return parseInto(c, args, stdout, stderr)
	}
	k, _, err := newParser(&commands{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	compared, one := 0, 0
	// -short tries each flag with the first command that has it: the
	// flags shared by most commands would otherwise take most of the run.
	tried := map[string]bool{}
	for _, cmd := range k.Model.Children {
		cases := [][]string{{cmd.Name}, {cmd.Name, "--help"}, {cmd.Name, "--no-such-flag"}, {cmd.Name, "stray"},
			{cmd.Name, "--config", cfg}, {cmd.Name, "--config", cfg, "--platform", "linux/s390x"}}
		for _, f := range cmd.Flags {
			if testing.Short() && tried[f.Name] {
				continue
			}
			tried[f.Name] = true
			v := f.Default
			if v == "" {
				v = "x"
			}
			cases = append(cases, []string{cmd.Name, "--" + f.Name + "=" + v})
			for _, g := range garbage(f) {
				cases = append(cases, []string{cmd.Name, "--" + f.Name + "=" + g})
			}
		}
		for _, args := range cases {
			if _, _, ok := oneCommand(&commands{}, args); ok {
				one++
			}
			want, got := outcome(args, all), outcome(args, parse)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q:\n got %+v\nwant %+v", args, got, want)
			}
			compared++
		}
	}
	if compared < 100 || one != compared {
		t.Fatalf("%d argument lists compared, %d of them parsed with one command's grammar", compared, one)
	}
	// What names no command first still gets the whole grammar.
	for _, args := range [][]string{nil, {"--help"}, {"nonsense"}} {
		if _, _, ok := oneCommand(&commands{}, args); ok {
			t.Errorf("%q parsed with one command's grammar", args)
		}
	}
}

// Every command names itself, so oneCommand finds each by its name.
func TestEveryCommandNamed(t *testing.T) {
	k, _, err := newParser(&commands{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range k.Model.Children {
		if _, _, ok := oneCommand(&commands{}, []string{cmd.Name}); !ok {
			t.Errorf("command %q has no name tag in cli", cmd.Name)
		}
	}
}
