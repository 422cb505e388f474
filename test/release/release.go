// Package release builds the project's commands as the Dockerfile does,
// for the tests and benchmarks that start, weigh or budget them: a start,
// its memory and its size are then the released binary's.
package release

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// env is what the Dockerfile's build sets: static binaries.
var env = []string{"CGO_ENABLED=0"}

// Build builds ./cmd/<name> of the module at root into out, with
// -trimpath and -ldflags="-s -w".
func Build(root, name, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/"+name)
	cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, b)
	}
	return nil
}

// Packages lists the packages ./cmd/<name> of the module at root links
// when built so (go list -deps).
func Packages(root, name string) ([]string, error) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/"+name)
	cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/%s: %w", name, err)
	}
	return strings.Fields(string(b)), nil
}
