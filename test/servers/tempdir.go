package servers

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessTempDir makes a temp dir that lives as long as the test binary:
// for servers shared by its tests and binaries built once for them. No
// test's cleanup can remove it, so the name carries the binary's pid, and
// each call first removes the dirs of prefix whose process has exited
// (finished, killed by a timeout or by a mutation tool). Without that every
// test binary left up to a gigabyte of server data and builds in the temp
// dir.
func ProcessTempDir(prefix string) (string, error) {
	sweepTempDirs(prefix)
	return os.MkdirTemp("", fmt.Sprintf("%s-%d-*", prefix, os.Getpid()))
}

// sweepTempDirs removes prefix-PID-* dirs whose process is gone. A dir
// whose pid is reused by a live process stays until a later sweep.
func sweepTempDirs(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-*"))
	for _, d := range dirs {
		pid, ok := tempDirPID(filepath.Base(d), prefix)
		if ok && pid != os.Getpid() && processGone(pid) {
			_ = os.RemoveAll(d) // best effort: another sweeper may race us
		}
	}
}

// tempDirPID reads PID from a name "prefix-PID-RANDOM".
func tempDirPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}
