package servers

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so stop can signal
// everything it spawned, and asks the kernel to kill it if the test binary
// dies without running its cleanups (a panic or a timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// The negative pid addresses the whole group; errors mean it is gone.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// processGone reports whether no process has pid (signal 0 probes it).
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
