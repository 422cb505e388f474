// Package budget guards the release binaries' weight, so what a handler
// loads at each start cannot grow back unnoticed: their size as the
// Dockerfile builds them, the packages linked into them and what their
// initialisation allocates.
package budget

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/release"
)

// budget is one binary's: today's weight with a little room.
// Initialisation time is logged, not checked: it depends on the machine's
// load, the bytes allocated do not.
type budget struct {
	cmd      string   // ./cmd/<cmd>
	args     []string // a quick run that initialises every package
	bytes    int64    // stripped, as the Dockerfile builds it
	packages int      // go list -deps
	init     int64    // bytes allocated by package initialisation
	// refuse are module path prefixes it may not link, besides
	// notLinked and notLinkedModules, and why.
	refuse map[string]string
}

var budgets = []budget{
	// Targets: 60 MB, 800 packages, 2 MB of init; init is about 1.9 MB,
	// of which regclient's reference and media-type regexps are 0.85 MB.
	{cmd: "catalogsync", args: []string{"version"}, bytes: 37_000_000, packages: 800, init: 2_000_000},
	// The read-only server starts for a request: 17.5 MB, 322 packages,
	// 0.32 MB of init.
	{cmd: "catalogsync-reader", args: []string{"-h"}, bytes: 20_000_000, packages: 360, init: 400_000,
		refuse: map[string]string{
			"github.com/catalogsync/catalogsync/sync/":        "the sync pipeline and engine: catalogsync-reader only reads what a sync published",
			"github.com/catalogsync/catalogsync/handlers/api": "the REST API triggers syncs: it links the engine",
			"github.com/regclient/":                           "registry access (0.85 MB of init for its regexps alone): a reader pulls no image",
			"k8s.io/":                                         "cluster access: a reader writes no status",
			"github.com/cloudevents/":                         "event receivers trigger syncs",
		}},
}

// notLinked are packages a handler must not link, and why: each came in
// through one import that a lighter one replaced.
var notLinked = map[string]string{
	"github.com/aws/aws-sdk-go-v2/config": "the SDK's default chain links SSO, SSO-OIDC, sign-in, STS and an ini parser (45 packages, 0.56 MB of init): storage/s3 builds aws.Config itself",
	"go.uber.org/zap":                     "the CloudEvents SDK's protocol/http builds a zap logger at init (460 KB): use internal/cehttp",
	"k8s.io/api/core/v1":                  "100 KB of init and 3.8 MB of binary for one Secret: read it unstructured",
	"k8s.io/client-go/kubernetes":         "the typed clientset links every API group's client (about 230 packages): use the dynamic client",
}

// notLinkedModules are module path prefixes none of whose packages a
// handler may link, and why.
var notLinkedModules = map[string]string{
	"github.com/sigstore/":                 "sigstore-go links rekor, gRPC, go-openapi and TUF (260 packages, 1.7 MB of init): internal/sigverify verifies bundles",
	"github.com/yuin/goldmark":             "its Unicode case-folding map, regexps and tag maps allocate 284 KB at every start for the UI's descriptions: internal/markdown renders them (goldmark stays as its tests' oracle)",
	"github.com/prometheus/client_golang/": "links procfs, client_model and protobuf (49 packages, 210 KB and 0.5 ms of init) for one endpoint: package metrics writes the text format",
	"google.golang.org/protobuf/":          "its detrand reads the whole executable at init; it came in only through client_golang's client_model",
}

// refused says why package p must not be linked, "" when it may be.
func (b budget) refused(p string) string {
	if why, ok := notLinked[p]; ok {
		return why
	}
	for prefix, why := range b.refuse {
		if strings.HasPrefix(p, prefix) {
			return why
		}
	}
	for prefix, why := range notLinkedModules {
		if strings.HasPrefix(p, prefix) {
			return why
		}
	}
	return ""
}

func TestReleaseBinariesWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binaries")
	}
	for _, b := range budgets {
		t.Run(b.cmd, func(t *testing.T) { b.check(t) })
	}
}

func (b budget) check(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), b.cmd)
	if err := release.Build(root, b.cmd, bin); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := release.Packages(root, b.cmd)
	if err != nil {
		t.Fatal(err)
	}
	packages := len(deps)
	for _, p := range deps {
		if why := b.refused(p); why != "" {
			t.Errorf("%s is linked: %s", p, why)
		}
	}
	// The least of three starts: a busy machine adds time, not bytes,
	// but a run may still allocate a little more than another.
	init := initCost{bytes: -1}
	for range 3 {
		c := traceInit(t, bin, b.args)
		if init.bytes < 0 || c.bytes < init.bytes {
			init.bytes = c.bytes
		}
		if init.packages == 0 || c.ms < init.ms {
			init.ms, init.packages = c.ms, c.packages
		}
	}
	t.Logf("binary %.1f MB, %d packages linked, init of %d packages: %d bytes, %.2f ms (least of 3 starts)",
		float64(fi.Size())/1e6, packages, init.packages, init.bytes, init.ms)
	if fi.Size() > b.bytes {
		t.Errorf("release binary is %d bytes, budget %d", fi.Size(), b.bytes)
	}
	if packages > b.packages {
		t.Errorf("%d packages linked, budget %d (go list -deps ./cmd/%s)", packages, b.packages, b.cmd)
	}
	if init.bytes > b.init {
		t.Errorf("initialisation allocates %d bytes, budget %d (GODEBUG=inittrace=1 %s %s)", init.bytes, b.init, b.cmd, strings.Join(b.args, " "))
	}
}

type initCost struct {
	packages int
	bytes    int64
	ms       float64
}

// traceInit runs bin args with GODEBUG=inittrace=1 and sums its lines:
// "init PKG @T ms, MS ms clock, BYTES bytes, N allocs".
func traceInit(t *testing.T, bin string, args []string) initCost {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = io.Discard
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	var c initCost
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		b, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		c.packages++
		c.ms += ms
		c.bytes += b
	}
	if c.packages == 0 {
		t.Fatalf("no inittrace lines from %s:\n%s", bin, stderr.String())
	}
	return c
}
