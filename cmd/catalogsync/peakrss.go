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

// peakAnon is the highest anonymous resident memory sampled, in pages;
// peakFile the file-backed part of the highest resident set sampled
// (VmHWM's executable pages, as near its peak as the samples come).
var peakAnon, peakFile, peakRes atomic.Int64

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
			samplePeak(buf)
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// samplePeak records one sample of /proc/self/statm in the peaks.
func samplePeak(buf []byte) {
	res, file := statm(buf)
	if res-file > peakAnon.Load() {
		peakAnon.Store(res - file)
	}
	if res > peakRes.Load() {
		peakRes.Store(res)
		peakFile.Store(file)
	}
}

// statmAnon reads resident minus shared pages from /proc/self/statm.
func statmAnon(buf []byte) int64 {
	res, file := statm(buf)
	return res - file
}

// statm reads the resident and shared (file-backed) pages from
// /proc/self/statm; zeros when it cannot.
func statm(buf []byte) (res, shared int64) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	n, _ := f.Read(buf)
	fields := bytes.Fields(buf[:n])
	if len(fields) < 3 {
		return 0, 0
	}
	res, err1 := strconv.ParseInt(string(fields[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(fields[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return res, shared
}

// reportPeakRSS prints the process's peak resident memory (VmHWM), its
// sampled anonymous peak and the file-backed pages at its sampled
// resident peak when CATALOGSYNC_PRINT_PEAK_RSS is set. A
// parent's rusage cannot be trusted for this: Linux carries the forking
// parent's high-water mark across exec into the child's ru_maxrss, while
// VmHWM belongs to the new image alone.
func reportPeakRSS(w io.Writer) {
	if envValue(envPeakRSS) == "" {
		return
	}
	samplePeak(make([]byte, 128))
	page := int64(os.Getpagesize())
	fmt.Fprintf(w, "peak-anon-kib %d\n", peakAnon.Load()*page>>10)
	fmt.Fprintf(w, "peak-file-kib %d\n", peakFile.Load()*page>>10)
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
