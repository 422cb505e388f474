package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/regclient/regclient"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// Secrets of the serve process's trigger endpoints.
const (
	registrySecret = "hostile-registry-notify-secret"
	ciSecret       = "hostile-ci-hmac-secret"
	eventsToken    = "hostile-events-token"
	apiToken       = "hostile-api-token"
)

// catalogName is the one catalog serve keeps synced.
const catalogName = "hostile"

// env is what every subtest shares: one registry, one serve process, the
// good catalog that was published before anything hostile happened, and
// what the file system looked like then.
type env struct {
	reg  *servers.Registry
	cs   *servers.Catalogsync
	rc   *regclient.RegClient
	ref  string // the catalog's tag: <registry>/acme/catalog:v1
	root string // repository root, for testdata

	base     string // test dir: base/sentinel holds everything serve may touch
	sentinel string // parent of store and tmp; nothing else may appear in it
	store    string
	tmp      string
	secret   string // a file outside the store that links in images point at

	pid       int     // serve's process id (0 when /proc is not available)
	startTime float64 // process_start_time_seconds at the start
	startTick string  // pid's start in clock ticks after boot (see procStart)
	worstPeak int64   // highest peak RSS seen during an image sync

	goodDigest string
	goodAll    []byte // GET /catalogs/hostile/api/v1/all of the good catalog
	snapshot   map[string]string

	client *http.Client // no transparent gzip: bodies compare byte for byte
}

// setup starts the registry and serve, and publishes the good catalog.
func setup(t *testing.T) *env {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: filepath.Join(wd, "..", ".."), base: t.TempDir()}
	e.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	e.sentinel = filepath.Join(e.base, "sentinel")
	e.store = filepath.Join(e.sentinel, "store")
	e.tmp = filepath.Join(e.sentinel, "tmp")
	for _, d := range []string{e.store, e.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file hostile links point at: if any link were followed on the
	// host, its object would show up in the served catalog.
	e.secret = filepath.Join(e.sentinel, "secret.json")
	if err := os.WriteFile(e.secret, []byte(`{"schema":"acme.secret","name":"leaked-from-host"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The registry must know where to notify before it starts, and serve
	// its address: serve gets a port chosen first.
	addr := servers.FreeAddr(t)
	e.reg = servers.StartRegistry(t, servers.WithNotifications("http://"+addr+"/hooks/registry", map[string]string{"Authorization": registrySecret}))
	e.rc = imagebuild.NewRegClient(e.reg.Host)
	e.ref = e.reg.Host + "/acme/catalog:v1"

	// The good catalog is on the tag before serve starts: serve syncs it
	// at start.
	ctx := context.Background()
	e.goodDigest, err = imagebuild.Push(ctx, e.rc, e.ref, e.goodImage())
	if err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(e.base, "catalogsync.yaml")
	writeFile(t, cfg, fmt.Sprintf(`storage:
  dir: %s
registries:
- name: %s
  plainHTTP: true
catalogs:
- name: %s
  image: %s
webhooks:
  receivers:
  - name: registry
    type: distribution
    secret: env:HOSTILE_REGISTRY_SECRET
  - name: ci
    type: generic
    secret: env:HOSTILE_CI_SECRET
    host: %s
events:
  token: env:HOSTILE_EVENTS_TOKEN
`, e.store, e.reg.Host, catalogName, e.ref, e.reg.Host))
	e.cs = servers.StartCatalogsyncAt(t, addr,
		[]string{"--config", cfg, "--tmp-dir", e.tmp, "--no-docker-config", "--poll-check-interval", "1h", "--gc-interval", "0", "--read-timeout", readTimeout.String()},
		"HOSTILE_REGISTRY_SECRET="+registrySecret, "HOSTILE_CI_SECRET="+ciSecret, "HOSTILE_EVENTS_TOKEN="+eventsToken, "CATALOGSYNC_API_TOKEN="+apiToken)
	t.Cleanup(func() {
		// The log goes with the test's temp dirs; keep it when it failed.
		if t.Failed() {
			if b, err := os.ReadFile(e.cs.LogPath); err == nil {
				f, err := os.CreateTemp("", "hostile-serve-*.log")
				if err == nil {
					f.Write(b)
					f.Close()
					t.Logf("serve's log kept in %s", f.Name())
				}
			}
		}
	})

	e.pid = findPid(e.cs.Addr)
	e.startTime = e.metric(t, "process_start_time_seconds", "")
	if e.startTime == 0 {
		t.Fatal("serve reports no process_start_time_seconds")
	}
	if e.pid != 0 {
		var err error
		if e.startTick, err = procStart(e.pid); err != nil {
			t.Fatal(err)
		}
	}
	e.waitIdle(t, 30*time.Second)
	v := e.catalog(t)
	if v.Published == nil || v.Published.Digest != e.goodDigest {
		t.Fatalf("good catalog not published at start: %+v", v)
	}
	e.goodAll = e.all(t)
	if len(e.goodAll) == 0 {
		t.Fatal("the good catalog serves nothing")
	}
	e.snapshot = e.outside(t)
	return e
}

// goodImage is the catalog published before any hostile image: three
// packages of a real community catalog.
func (e *env) goodImage() imagebuild.Image {
	return imagebuild.FromDir(filepath.Join(e.root, "testdata/fbc/community-v4.21-3pkgs/configs"), "/configs")
}

// tinyLayer is a small valid FBC under /configs, which hostile images
// carry besides their hostile part, so that only the latter can fail them.
func (e *env) tinyLayer(entries ...imagebuild.Entry) imagebuild.Layer {
	return imagebuild.Layer{FromDir: filepath.Join(e.root, "testdata/fbc/tiny/configs"), DirPrefix: "/configs", Entries: entries}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --- REST API ---

type operation struct {
	ID      string   `json:"id"`
	State   string   `json:"state"`
	Reasons []string `json:"reasons"`
	Result  *struct {
		Action          string             `json:"action"`
		Digest          string             `json:"digest"`
		Objects         int                `json:"objects"`
		DurationSeconds float64            `json:"durationSeconds"`
		Phases          map[string]float64 `json:"phases"`
	} `json:"result"`
	Error *struct {
		Phase     string `json:"phase"`
		Reason    string `json:"reason"`
		Retryable bool   `json:"retryable"`
		Message   string `json:"message"`
	} `json:"error"`
	DurationSeconds *float64 `json:"durationSeconds"`
}

type catalogView struct {
	Phase     string     `json:"phase"`
	Running   *operation `json:"running"`
	Queued    *operation `json:"queued"`
	LastSync  *operation `json:"lastSync"`
	Published *struct {
		Digest string `json:"digest"`
	} `json:"published"`
	NextRetry string `json:"nextRetry"`
}

func (e *env) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := e.client.Get(e.cs.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v; serve's log: %s", path, err, e.crash())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, b
}

func (e *env) catalog(t *testing.T) catalogView {
	t.Helper()
	code, b := e.get(t, "/api/v1/catalogs/"+catalogName)
	var v catalogView
	if code != http.StatusOK || json.Unmarshal(b, &v) != nil {
		t.Fatalf("GET catalog: %d %s", code, b)
	}
	return v
}

// all is the served catalog, as catalogd clients read it.
func (e *env) all(t *testing.T) []byte {
	t.Helper()
	code, b := e.get(t, "/catalogs/"+catalogName+"/api/v1/all")
	if code != http.StatusOK {
		t.Fatalf("GET all: %d %s", code, b)
	}
	return b
}

func (e *env) waitIdle(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, "catalog idle", timeout, func() bool {
		v := e.catalog(t)
		return v.Running == nil && v.Queued == nil && v.LastSync != nil
	})
}

// waitOp waits for the sync that a push of digest triggered (its reasons
// name the digest, as the registry's notification does) to finish.
func (e *env) waitOp(t *testing.T, digest string, timeout time.Duration) operation {
	t.Helper()
	var op operation
	eventually(t, "the sync of "+digest, timeout, func() bool {
		v := e.catalog(t)
		if v.LastSync == nil || v.Running != nil || v.Queued != nil {
			return false
		}
		for _, r := range v.LastSync.Reasons {
			if strings.Contains(r, digest) {
				op = *v.LastSync
				return true
			}
		}
		return false
	})
	return op
}

// --- metrics ---

func (e *env) scrape(t *testing.T) string {
	t.Helper()
	code, b := e.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	return string(b)
}

// metric sums the samples of name whose labels contain every one of
// labels (e.g. `source="generic"`); "" matches all.
func (e *env) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(e.scrape(t), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func (e *env) syncs(t *testing.T) float64 { return e.metric(t, "catalogsync_syncs_total") }

// --- invariants ---

// alive checks that the first serve process still answers: /healthz is
// 200, the process start time is the one seen at start, the log shows one
// start and no panic.
func (e *env) alive(t *testing.T) {
	t.Helper()
	if code, b := e.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, b)
	}
	if e.pid != 0 {
		// The process itself, not the metric: process_start_time_seconds
		// adds the boot time, which the kernel derives from the wall
		// clock, so a clock step (a VM restored from a snapshot, seen in
		// CI) moved it by 2 s with the same process running.
		st, err := procStart(e.pid)
		if err != nil {
			t.Fatalf("serve process %d is gone: %v", e.pid, err)
		}
		if st != e.startTick {
			t.Fatalf("serve restarted: process %d started at tick %s, was %s", e.pid, st, e.startTick)
		}
	} else if st := e.metric(t, "process_start_time_seconds", ""); st != e.startTime {
		t.Fatalf("serve restarted: process start time %v, was %v", st, e.startTime)
	}
	log := e.cs.Log()
	if n := strings.Count(log, ": starting "); n != 1 {
		t.Fatalf("serve was started %d times", n)
	}
	if c := e.crash(); c != "" {
		t.Fatalf("serve log shows a crash: %s", c)
	}
}

// crashMarks are what the Go runtime writes when a process dies of a
// panic, a fatal error or a fatal signal.
var crashMarks = regexp.MustCompile(`(?m)panic|^fatal error:|^SIG[A-Z]+: |^goroutine \d+ \[`)

// crash returns the part of serve's log that shows it crashing, with some
// context, or "" when the log shows no crash.
func (e *env) crash() string {
	log := e.cs.Log()
	loc := crashMarks.FindStringIndex(log)
	if loc == nil {
		return ""
	}
	return "\n" + log[max(0, loc[0]-2000):min(len(log), loc[0]+4000)]
}

// outside lists what is under the sentinel directory apart from the store
// and the temp dir, and what is in the test directory besides it.
func (e *env) outside(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(e.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == e.store || p == e.tmp {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// contained checks that nothing appeared outside the store: the test dir
// is as it was (but for the store and tmp), tmp is empty (the spool went
// away with its sync), every store path is a catalog key, and none of the
// named paths (escape targets of hostile entries) exists.
func (e *env) contained(t *testing.T, targets ...string) {
	t.Helper()
	now := e.outside(t)
	for p, s := range now {
		if was, ok := e.snapshot[p]; !ok {
			t.Errorf("written outside the store: %s (%s)", p, s)
		} else if was != s {
			t.Errorf("changed outside the store: %s (%s, was %s)", p, s, was)
		}
	}
	for p := range e.snapshot {
		if _, ok := now[p]; !ok {
			t.Errorf("removed outside the store: %s", p)
		}
	}
	if ents, err := os.ReadDir(e.tmp); err != nil || len(ents) > 0 {
		t.Errorf("temp dir not empty after the sync: %v %v", names(ents), err)
	}
	err := filepath.WalkDir(e.store, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.store, p)
		if d.Type()&fs.ModeSymlink != 0 || !(d.IsDir() || d.Type().IsRegular()) {
			t.Errorf("store holds a %v: %s", d.Type(), rel)
		}
		if !storeKey.MatchString(filepath.ToSlash(rel)) {
			t.Errorf("store holds an unexpected path: %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range targets {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("escape target exists: %s", p)
		}
	}
}

// storeKey is what the store may hold: its lock and catalogs/<name>/...
// with plain names (no hostile entry name can become a key).
// (leases/<job>: the cluster-wide turns of GC and polls; health/: the
// object the running service writes and deletes to probe the store.)
var storeKey = regexp.MustCompile(`^(\.|\.putif\.lock|leases|leases/[a-z0-9-]+|health|health/[A-Za-z0-9._-]+|catalogs|catalogs/` + catalogName + `(/[A-Za-z0-9._:-]+)*)$`)

func names(ents []os.DirEntry) []string {
	var s []string
	for _, d := range ents {
		s = append(s, d.Name())
	}
	return s
}

// previous checks that the good catalog is still the published one and is
// served byte for byte as before.
func (e *env) previous(t *testing.T) {
	t.Helper()
	v := e.catalog(t)
	if v.Published == nil || v.Published.Digest != e.goodDigest {
		t.Errorf("published pointer moved: %+v, want %s", v.Published, e.goodDigest)
	}
	if got := e.all(t); !bytes.Equal(got, e.goodAll) {
		t.Errorf("served catalog changed: %d bytes, was %d", len(got), len(e.goodAll))
	}
}

// --- process memory ---

// findPid finds serve's process by the --addr it was started with.
func findPid(addr string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if i := slices.Index(args, "--addr"); i >= 0 && i+1 < len(args) && args[i+1] == addr && slices.Contains(args, "serve") {
			return pid
		}
	}
	return 0
}

// procStart is field 22 of /proc/<pid>/stat: when the process started, in
// clock ticks after boot. A pid reused by a later process has a later one.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:])) // from field 3 on
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return fields[19], nil
}

// resetPeak resets serve's peak RSS (VmHWM), so peakRSS reports the peak
// of what follows; it reports false when the kernel does not allow it.
func (e *env) resetPeak() bool {
	if e.pid == 0 {
		return false
	}
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", e.pid), []byte("5"), 0) == nil
}

// peakRSS returns serve's peak resident set size in bytes (0: unknown).
func (e *env) peakRSS() int64 {
	if e.pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
