package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// reportPeakRSS prints the process's peak resident memory (VmHWM) when
// CATALOGSYNC_PRINT_PEAK_RSS is set. A parent's rusage cannot be trusted
// for this: Linux carries the forking parent's high-water mark across exec
// into the child's ru_maxrss, while VmHWM belongs to the new image alone.
func reportPeakRSS(w io.Writer) {
	if os.Getenv("CATALOGSYNC_PRINT_PEAK_RSS") == "" {
		return
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fmt.Fprintf(w, "peak-rss-kib %s\n", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return
		}
	}
}
