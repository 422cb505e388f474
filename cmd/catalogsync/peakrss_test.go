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
