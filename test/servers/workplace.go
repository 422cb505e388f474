package servers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SharedEnv names the workplace's shared folder (real catalogs, the
// reference binaries) where it is not ../shared beside the repository,
// e.g. for a git worktree elsewhere. A user's clone has neither.
const SharedEnv = "CATALOGSYNC_SHARED"

// SharedDir returns the shared folder: $CATALOGSYNC_SHARED, else ../shared
// beside the repository; "" when it is absent, and whoever needs it skips.
func SharedDir() string {
	d := os.Getenv(SharedEnv)
	if d == "" {
		script, err := toolsScript()
		if err != nil {
			return ""
		}
		d = filepath.Join(filepath.Dir(script), "..", "..", "shared")
	}
	if _, err := os.Stat(d); err != nil {
		return ""
	}
	d, _ = filepath.Abs(d)
	return d
}

// Peer returns the path of a reference binary (opm, catalogd-ref) from the
// shared folder's tools/peers, and skips t, saying why, without it.
func Peer(t testing.TB, name string) string {
	t.Helper()
	dir := SharedDir()
	if dir == "" {
		t.Skipf("needs the reference binary %s from ../shared/tools/peers (or $%s), which a user's clone lacks", name, SharedEnv)
	}
	p := filepath.Join(dir, "tools", "peers", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference binary %s absent: %v", name, err)
	}
	return p
}

// PeerCommand is exec.CommandContext for a reference binary, with its
// temp dir set to tmp: `opm validate` and `opm alpha render-graph` leave
// an opm-registry-* dir of their own in the temp dir on every run.
func PeerCommand(ctx context.Context, tmp, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	return cmd
}
