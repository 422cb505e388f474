package catalog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A zombie (exited, not yet reaped) is no live process; this process is.
func TestProcessAliveZombie(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Wait() //nolint:errcheck // reaped at the end; the zombie is the point
	pid := cmd.Process.Pid
	zombie := false
	for range 2000 { // bounded: the child exits at once
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil && bytes.Contains(b, []byte(") Z ")) {
			zombie = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !zombie {
		t.Skip("the child never showed as a zombie")
	}
	if processAlive(pid) {
		t.Fatal("a zombie counted as alive")
	}
}

// A holder of the same host whose PID is unknown (0) is never taken for
// exited.
func TestOutlivedUnknownPID(t *testing.T) {
	h := LeaseHolder{Replica: "r", Instance: "me", Host: "host-1", PID: os.Getpid()}
	if h.outlived(LeaseHolder{Replica: "r", Instance: "other", Host: "host-1", PID: 0}) {
		t.Fatal("a holder with PID 0 was taken for exited")
	}
}

// A live process is alive whatever its name: the state is read after
// the last ")" of the command name, never inside it.
func TestProcessAliveOddName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	for _, name := range []string{"aXb", "a) Z", "Xy"} {
		link := filepath.Join(t.TempDir(), name)
		if err := os.Symlink(sleep, link); err != nil {
			t.Skip(err)
		}
		cmd := exec.Command(link, "30")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		alive := processAlive(cmd.Process.Pid)
		cmd.Process.Kill() //nolint:errcheck // test cleanup
		cmd.Wait()         //nolint:errcheck // killed on purpose
		if !alive {
			t.Errorf("a live process named %q counted as exited", name)
		}
	}
}
