package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set by deploy/image and the Dockerfile
// (-ldflags "-X main.version=..."), for builds without VCS stamps.
var version string

type versionCmd struct{}

// run prints the module version, the VCS revision and time, and the Go
// version the binary was built with.
func (versionCmd) run(w io.Writer) error {
	info, _ := debug.ReadBuildInfo()
	writeVersion(w, info, version)
	return nil
}

func writeVersion(w io.Writer, info *debug.BuildInfo, stamped string) {
	module, modVersion, goVersion := "github.com/catalogsync/catalogsync", "", runtime.Version()
	rev, at, modified := "", "", ""
	if info != nil {
		module, modVersion, goVersion = info.Main.Path, info.Main.Version, info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	// A stamped version names a release; the module's own is "(devel)"
	// in a checkout.
	v := stamped
	if v == "" && modVersion != "" && modVersion != "(devel)" {
		v = modVersion
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(w, "catalogsync %s\n", v)
	fmt.Fprintf(w, "  module    %s\n", module)
	fmt.Fprintf(w, "  revision  %s%s\n", orUnknown(rev), modified)
	fmt.Fprintf(w, "  time      %s\n", orUnknown(at))
	fmt.Fprintf(w, "  go        %s\n", goVersion)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
