package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/regclient/regclient/types/platform"
)

// sourceURL is the org.opencontainers.image.source label.
const sourceURL = "https://github.com/catalogsync/catalogsync"

// source is what the image says about the checkout it was built from.
type source struct {
	root     string    // the module's root folder
	version  string    // git describe, or --version
	revision string    // the commit, empty outside a git checkout
	created  time.Time // the commit's time, so a rebuild gives the same digests
}

func readSource(ctx context.Context, version string) (source, error) {
	gomod, err := output(ctx, "", "go", "env", "GOMOD")
	if err != nil || gomod == "" || gomod == os.DevNull {
		return source{}, errors.New("run inside the catalogsync module (go env GOMOD found none)")
	}
	s := source{root: filepath.Dir(gomod), version: version, created: time.Unix(0, 0).UTC()}
	s.revision, _ = output(ctx, s.root, "git", "rev-parse", "HEAD")
	if s.version == "" {
		s.version, _ = output(ctx, s.root, "git", "describe", "--tags", "--always", "--dirty")
	}
	if s.version == "" {
		s.version = "dev"
	}
	ts, _ := output(ctx, s.root, "git", "log", "-1", "--format=%ct")
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		ts = v
	}
	if n, err := strconv.ParseInt(ts, 10, 64); err == nil {
		s.created = time.Unix(n, 0).UTC()
	}
	return s, nil
}

// labels are the image's OCI annotations, the same the Dockerfile sets.
func (s source) labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.source":  sourceURL,
		"org.opencontainers.image.version": s.version,
		"org.opencontainers.image.title":   "catalogsync",
	}
	if s.revision != "" {
		l["org.opencontainers.image.revision"] = s.revision
	}
	return l
}

// goBuild builds the static binaries (commands) for p into dir as the
// Dockerfile does:
// CGO_ENABLED=0, -trimpath, -ldflags="-s -w", the version stamped both by
// the Go toolchain (VCS revision and time; on in a git checkout whatever
// GOFLAGS says) and as main.version (for builds without the .git folder).
func goBuild(ctx context.Context, s source, p platform.Platform, dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for _, c := range commands {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs="+strconv.FormatBool(s.revision != ""), //nolint:gosec // G204: the version is the operator's own flag or git's
			"-ldflags=-s -w -X main.version="+s.version, "-o", filepath.Join(dir, c), "./cmd/"+c)
		cmd.Dir = s.root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
		if p.Architecture == "arm" {
			cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/%s for %s: %w\n%s", c, p, err, b)
		}
	}
	return nil
}

// output runs a command and returns its trimmed standard output.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: callers pass fixed go and git commands
	cmd.Dir = dir
	b, err := cmd.Output()
	return strings.TrimSpace(string(b)), err
}
