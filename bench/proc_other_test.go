//go:build !linux

package bench

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }

func flushDisks() {}
