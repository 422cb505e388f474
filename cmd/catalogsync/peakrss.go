package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// peakAnon is the highest anonymous resident memory sampled, in pages.
var peakAnon atomic.Int64

// samplePeakAnon samples the process's anonymous resident memory (statm's
// resident minus its file-backed pages) every few milliseconds. VmHWM
// also counts the pages of the executable the kernel has mapped: 64 KiB
// around each page that package initialisation touches, about 40 MiB of
// the binary whatever the catalog; the anonymous peak is the memory a
// sync actually uses.
func samplePeakAnon() {
	if envValue(envPeakRSS) == "" {
		return
	}
	go func() {
		buf := make([]byte, 128)
		for {
			if n := statmAnon(buf); n > peakAnon.Load() {
				peakAnon.Store(n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// statmAnon reads resident minus shared pages from /proc/self/statm.
func statmAnon(buf []byte) int64 {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0
	}
	defer f.Close()
	n, _ := f.Read(buf)
	fields := bytes.Fields(buf[:n])
	if len(fields) < 3 {
		return 0
	}
	res, err1 := strconv.ParseInt(string(fields[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(fields[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return res - shared
}

// reportPeakRSS prints the process's peak resident memory (VmHWM) and its
// sampled anonymous peak when CATALOGSYNC_PRINT_PEAK_RSS is set. A
// parent's rusage cannot be trusted for this: Linux carries the forking
// parent's high-water mark across exec into the child's ru_maxrss, while
// VmHWM belongs to the new image alone.
func reportPeakRSS(w io.Writer) {
	if envValue(envPeakRSS) == "" {
		return
	}
	if n := statmAnon(make([]byte, 128)); n > peakAnon.Load() {
		peakAnon.Store(n)
	}
	fmt.Fprintf(w, "peak-anon-kib %d\n", peakAnon.Load()*int64(os.Getpagesize())>>10)
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
