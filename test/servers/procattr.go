package servers

import "syscall"

// ChildProcAttr is what the servers here start their processes with (a
// process group of their own; killed with the test binary where the OS
// can), for tests that start processes themselves.
func ChildProcAttr() *syscall.SysProcAttr { return sysProcAttr() }
