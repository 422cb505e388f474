package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// statmAnon reads a plausible anonymous resident size: more than nothing,
// less than the whole resident set, which also holds the executable.
func TestStatmAnon(t *testing.T) {
	anon := statmAnon(make([]byte, 128)) * int64(os.Getpagesize())
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc here")
	}
	var rss int64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rss, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss <<= 10
		}
	}
	if anon <= 0 || anon >= rss {
		t.Fatalf("anonymous resident %d bytes, resident %d", anon, rss)
	}
}

// The peak report splits VmHWM: the file-backed pages at the resident
// peak are reported beside the anonymous peak, and are less than VmHWM.
func TestReportPeakRSSGivesFileBackedPart(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc here")
	}
	t.Setenv(envPeakRSS, "1")
	var out strings.Builder
	reportPeakRSS(&out)
	kib := map[string]int64{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			kib[f[0]], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	file, rss := kib["peak-file-kib"], kib["peak-rss-kib"]
	if file <= 0 || file >= rss {
		t.Fatalf("file-backed %d KiB at a peak of %d KiB:\n%s", file, rss, out.String())
	}
}
