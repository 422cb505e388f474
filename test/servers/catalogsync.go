package servers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/release"
)

// RaceEnv names the variable that, set to 1, builds the catalogsync binary the tests start
// with the race detector, so end-to-end runs check the service too.
const RaceEnv = "CATALOGSYNC_E2E_RACE"

// BinaryEnv names the variable that points CatalogsyncBinary at a binary
// already built from this tree: test/run.sh builds one for every test
// package that starts the service, each of which would link its own.
const BinaryEnv = "CATALOGSYNC_TEST_BINARY"

// ReaderBinaryEnv is BinaryEnv for catalogsync-reader.
const ReaderBinaryEnv = "CATALOGSYNC_TEST_READER_BINARY"

// binary is one command built once per test binary.
type binary struct {
	once sync.Once
	path string
	err  error
}

var built, builtReader binary

// CatalogsyncBinary builds ./cmd/catalogsync from this repository once per
// test binary (into a temp dir that lives as long as the test binary) and
// returns its path. End-to-end tests run the service as its own process so
// that kill -9, restarts and memory are those of the real thing.
func CatalogsyncBinary(t testing.TB) string {
	t.Helper()
	return built.get(t, "catalogsync", BinaryEnv)
}

// ReaderBinary is CatalogsyncBinary for ./cmd/catalogsync-reader.
func ReaderBinary(t testing.TB) string {
	t.Helper()
	return builtReader.get(t, "catalogsync-reader", ReaderBinaryEnv)
}

// get builds ./cmd/<name> once, or takes the binary env names.
func (bin *binary) get(t testing.TB, name, env string) string {
	t.Helper()
	skipShort(t, name+" process")
	bin.once.Do(func() {
		if p := os.Getenv(env); p != "" && os.Getenv(RaceEnv) != "1" {
			if _, err := os.Stat(p); err != nil {
				bin.err = fmt.Errorf("%s: %v", env, err)
				return
			}
			bin.path = p
			return
		}
		bin.path, bin.err = build(name)
	})
	if bin.err != nil {
		t.Fatalf("servers: %v", bin.err)
	}
	return bin.path
}

// build runs go build ./cmd/<name> (with -race under RaceEnv) into a
// directory that lives as long as the test binary.
func build(name string) (string, error) {
	script, err := toolsScript()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(filepath.Dir(script))
	dir, err := ProcessTempDir(name + "-bin")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if os.Getenv(RaceEnv) != "1" {
		// As released (test/run.sh too): a start, its memory and its
		// first answer are the released binary's.
		if err := release.Build(root, name, p); err != nil {
			return "", err
		}
		return p, nil
	}
	// The race detector needs cgo.
	cmd := exec.Command("go", "build", "-race", "-o", p, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return p, nil
}

// Catalogsync is a `catalogsync serve` process on 127.0.0.1.
type Catalogsync struct {
	Addr    string // 127.0.0.1:port
	URL     string // http://127.0.0.1:port
	LogPath string

	t    testing.TB
	mu   sync.Mutex
	proc *process
}

const catalogsyncReadyTimeout = 60 * time.Second

// StartCatalogsync runs `catalogsync serve` with args (without --addr: it
// gets a free port) and env added to the environment, and waits until
// /readyz answers. It logs at debug level to a file in t.TempDir().
// t.Cleanup stops it.
func StartCatalogsync(t testing.TB, args []string, env ...string) *Catalogsync {
	t.Helper()
	return startCatalogsync(t, "serve", "", args, env)
}

// StartCatalogsyncCommand is StartCatalogsyncAt for another command that
// serves /readyz on --addr (agent); addr "" picks a free port.
func StartCatalogsyncCommand(t testing.TB, command, addr string, args []string, env ...string) *Catalogsync {
	t.Helper()
	return startCatalogsync(t, command, addr, args, env)
}

// StartCatalogsyncAt is StartCatalogsync on a given address, for tests that
// must tell another server (a registry's notifications) where it will
// listen before it starts; see FreeAddr.
func StartCatalogsyncAt(t testing.TB, addr string, args []string, env ...string) *Catalogsync {
	t.Helper()
	return startCatalogsync(t, "serve", addr, args, env)
}

// FreeAddr returns a 127.0.0.1 address that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0])
}

func startCatalogsync(t testing.TB, command, addr string, args, env []string) *Catalogsync {
	t.Helper()
	bin := CatalogsyncBinary(t)
	dir := t.TempDir()
	c := &Catalogsync{t: t, LogPath: filepath.Join(dir, "catalogsync.log")}
	nPorts := 1
	if addr != "" {
		nPorts = 0 // a fixed address: nothing to retry on
	}
	p, err := launch(nPorts, func(ports []int) *process {
		c.Addr = addr
		if addr == "" {
			c.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
		}
		c.URL = "http://" + c.Addr
		if slices.Contains(args, "--tls-cert-file") {
			c.URL = "https://" + c.Addr
		}
		return &process{
			name:      "catalogsync",
			path:      bin,
			args:      append([]string{command, "--addr", c.Addr, "--log-level", "debug"}, args...),
			env:       env,
			logPath:   c.LogPath,
			boundLine: "addr=" + c.Addr,
		}
	}, catalogsyncReadyTimeout, c.ready)
	if err != nil {
		t.Fatalf("servers: starting catalogsync: %v", err)
	}
	c.proc = p
	t.Cleanup(func() { p.cleanup(t) })
	return c
}

func (c *Catalogsync) ready(ctx context.Context) error {
	if strings.HasPrefix(c.URL, "https://") {
		// Readiness only: the tests check the certificate themselves.
		return HTTPReady(insecureClient, c.URL+"/readyz", nil)(ctx)
	}
	return HTTPReady(plainClient, c.URL+"/readyz", nil)(ctx)
}

var insecureClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// Stop stops the service cleanly (SIGTERM: in-flight syncs are cancelled).
func (c *Catalogsync) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proc.stop()
}

// Kill kills the service with SIGKILL, as an OOM kill or a node loss would:
// nothing of it runs after this returns.
func (c *Catalogsync) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proc.kill()
}

// Start starts a stopped or killed service again, same port and arguments.
func (c *Catalogsync) Start() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.proc.restart(catalogsyncReadyTimeout, c.ready); err != nil {
		c.t.Fatalf("servers: restarting catalogsync: %v", err)
	}
}

// Pid is the current run's process id (0 when it is not running).
func (c *Catalogsync) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proc.mu.Lock()
	defer c.proc.mu.Unlock()
	if c.proc.cmd == nil || c.proc.cmd.Process == nil {
		return 0
	}
	select {
	case <-c.proc.done:
		return 0
	default:
		return c.proc.cmd.Process.Pid
	}
}

// Log returns everything the service logged, over all its runs.
func (c *Catalogsync) Log() string {
	b, _ := os.ReadFile(c.LogPath)
	return string(b)
}
