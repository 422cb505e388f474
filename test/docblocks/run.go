package docblocks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Run runs b's script with bash (errexit, nounset, pipefail) in dir with
// env added to this process's, for at most limit. Background processes the
// script starts are ended with it: the script runs in its own process
// group, which is killed afterwards. It returns the combined output.
func Run(ctx context.Context, b Block, dir string, env []string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	outFile, err := os.CreateTemp("", "docblock-*.out")
	if err != nil {
		return "", err
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.Script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	// A file, not a pipe: a server left running in the background would
	// hold a pipe open and Wait with it.
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		// Bounded: give the group a moment to stop, then end it.
		for i := 0; i < 50 && syscall.Kill(-cmd.Process.Pid, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, err := os.ReadFile(outFile.Name())
	if err != nil {
		return "", err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return string(out), fmt.Errorf("did not finish in %v", limit)
	}
	return string(out), runErr
}

// Root is the repository's root, from this package's directory.
func Root() (string, error) { return filepath.Abs("../..") }
