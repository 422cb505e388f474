package bench

import "syscall"

// childAttr makes the kernel kill a child this benchmark starts if the test
// binary dies first (a timeout or a panic), so no server outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// flushDisks writes every dirty page back, so a sync's writes do not slow
// the next, timed one.
func flushDisks() { syscall.Sync() }
