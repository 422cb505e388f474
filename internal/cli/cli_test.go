package cli_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/internal/cli"
)

func parse(t *testing.T, args ...string) (cli.Reader, cli.Origins, error) {
	t.Helper()
	var r cli.Reader
	_, from, err := cli.Parse(&r, args, io.Discard, io.Discard, cli.Options{Name: "test"})
	return r, from, err
}

// TestFlagBeatsEnvBeatsDefault: one precedence for every setting, and
// each value's origin named.
func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	t.Setenv("CATALOGSYNC_SHUTDOWN_GRACE", "")
	t.Setenv("CATALOGSYNC_IDLE_TIMEOUT", "3s")
	t.Setenv("CATALOGSYNC_ADDR", ":9000")
	t.Setenv("PORT", "")
	r, from, err := parse(t, "--addr", ":9100")
	if err != nil {
		t.Fatal(err)
	}
	if r.Addr != ":9100" || from.Of("addr") != "flag --addr" {
		t.Errorf("--addr %q from %q: the flag must win", r.Addr, from.Of("addr"))
	}
	if r.IdleTimeout != 3*time.Second || from.Of("idle-timeout") != "env CATALOGSYNC_IDLE_TIMEOUT" {
		t.Errorf("--idle-timeout %v from %q: the environment must win over the default", r.IdleTimeout, from.Of("idle-timeout"))
	}
	if r.ShutdownGrace != 10*time.Second || from.Of("shutdown-grace") != "default" {
		t.Errorf("--shutdown-grace %v from %q: an empty variable is unset", r.ShutdownGrace, from.Of("shutdown-grace"))
	}
}

// TestPORTGivesTheListenAddress: Knative and Cloud Run set PORT=n.
func TestPORTGivesTheListenAddress(t *testing.T) {
	t.Setenv("CATALOGSYNC_ADDR", "")
	t.Setenv("PORT", "8123")
	if r, _, err := parse(t); err != nil || r.Addr != ":8123" {
		t.Fatalf("addr %q, %v", r.Addr, err)
	}
}

// TestBadValuesNameTheirOrigin: a value that does not parse, or fails its
// check, is a UsageError naming the setting and where it came from.
func TestBadValuesNameTheirOrigin(t *testing.T) {
	t.Setenv("CATALOGSYNC_MAX_CONNECTIONS", "many")
	_, _, err := parse(t)
	var ue cli.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `CATALOGSYNC_MAX_CONNECTIONS="many"`) {
		t.Errorf("env: %v", err)
	}
	t.Setenv("CATALOGSYNC_MAX_CONNECTIONS", "")
	t.Setenv("CATALOGSYNC_GRAPHQL_MAX_ANSWER", "-5")
	if _, _, err := parse(t); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--graphql-max-answer") ||
		!strings.Contains(err.Error(), "from env CATALOGSYNC_GRAPHQL_MAX_ANSWER") {
		t.Errorf("check: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"5000": 5000, "5K": 5000, "4.5Gi": 4.5 * (1 << 30), "16Mi": 16 << 20, " 2 MB ": 2e6} {
		if got, err := cli.ParseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "1e30", "5X"} {
		if _, err := cli.ParseBytes(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
