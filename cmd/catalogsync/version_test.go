package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/servers"
)

// TestVersionCommand runs a built binary: its build info is what a user's
// binary carries, unlike a test binary's.
func TestVersionCommand(t *testing.T) {
	bin := servers.CatalogsyncBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("catalogsync version: %v\n%s", err, out)
	}
	// The build's own stamps (none when GOFLAGS has -buildvcs=false).
	rev := "unknown"
	if m, err := exec.Command("go", "version", "-m", bin).Output(); err == nil {
		for _, l := range strings.Split(string(m), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
				rev = strings.TrimPrefix(f[1], "vcs.revision=")
			}
		}
	}
	for _, want := range []string{"catalogsync ", "module    github.com/catalogsync/catalogsync", "revision  " + rev, "time      ", "go        " + runtime.Version()} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

func TestVersionShowsVCSStamps(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/catalogsync/catalogsync", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	var b strings.Builder
	writeVersion(&b, info, "")
	want := "catalogsync v1.2.3\n  module    github.com/catalogsync/catalogsync\n  revision  abc123 (modified)\n  time      2026-01-02T03:04:05Z\n  go        go1.99\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeVersion(&b, info, "v2.0.0")
	if !strings.HasPrefix(b.String(), "catalogsync v2.0.0\n") {
		t.Errorf("a stamped version wins over the module's:\n%s", b.String())
	}
}

// TestVersionWithoutVCS builds as the Dockerfile does without the .git
// folder: the version set by -ldflags is what the command shows.
func TestVersionWithoutVCS(t *testing.T) {
	servers.CatalogsyncBinary(t) // skips under -short, before the build
	bin := filepath.Join(t.TempDir(), "catalogsync")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("catalogsync version: %v\n%s", err, out)
	}
	for _, want := range []string{"catalogsync v9.8.7-test", "revision  unknown", "go        " + runtime.Version()} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}
