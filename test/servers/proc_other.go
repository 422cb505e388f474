//go:build !unix

package servers

import (
	"os/exec"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only kill the server itself without process groups.
func signalGroup(cmd *exec.Cmd, kill bool) {
	_ = cmd.Process.Kill()
}

// processGone cannot probe a pid here: every process counts as alive, so
// no temp dir is swept.
func processGone(int) bool { return false }
