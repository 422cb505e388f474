package servers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A dir of an exited process is swept; the caller's own, a live
// process's and names of another shape are kept.
func TestProcessTempDirSweepsExitedProcesses(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const prefix = "catalogsync-sweeptest"
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	mk := func(name string) string {
		d := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := mk(fmt.Sprintf("%s-%d-1", prefix, exited.Process.Pid))
	own := mk(fmt.Sprintf("%s-%d-2", prefix, os.Getpid()))
	live := mk(fmt.Sprintf("%s-%d-3", prefix, os.Getppid()))
	odd := mk(prefix + "-notapid")
	other := mk(fmt.Sprintf("%s-other-%d-4", prefix, exited.Process.Pid))

	d, err := ProcessTempDir(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := tempDirPID(filepath.Base(d), prefix); !ok || pid != os.Getpid() {
		t.Errorf("new dir %s does not carry this pid %d", d, os.Getpid())
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("dir of exited pid %d kept (%v)", exited.Process.Pid, err)
	}
	for _, keep := range []string{own, live, odd, other, d} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
}
