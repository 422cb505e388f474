//go:build unix && !linux

package servers

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so stop can signal
// everything it spawned. Only Linux has Pdeathsig.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// processGone reports whether no process has pid (signal 0 probes it).
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
