package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU and start times in /proc (USER_HZ, 100 on
// every Linux architecture).
const userHZ = 100

// appendRuntime appends the Go runtime's and the process's series, read
// now, with client_golang's names and HELP texts, sorted by name. A value
// the system does not give (no /proc outside Linux) is left out.
func appendRuntime(b []byte, start func() (float64, error)) []byte {
	b = appendGCPauses(b)
	rt := []rtmetrics.Sample{{Name: "/gc/gomemlimit:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	rtmetrics.Read(rt)
	b = appendRuntimeSample(b, "go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", rt[0])
	b = appendOne(b, "go_goroutines", "Number of goroutines that currently exist.", gauge, float64(runtime.NumGoroutine()))
	b = appendHead(b, "go_info", "Information about the Go environment.", gauge)
	b = appendSample(b, "go_info", "", []string{"version"}, []string{runtime.Version()}, "", 1)
	b = appendRuntimeSample(b, "go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", rt[1])
	b = appendRuntimeSample(b, "go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", rt[1])
	b = appendRuntimeSample(b, "go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", rt[2])
	threads, _ := runtime.ThreadCreateProfile(nil)
	b = appendOne(b, "go_threads", "Number of OS threads created.", gauge, float64(threads))

	st, stErr := readStat()
	if stErr == nil {
		b = appendOne(b, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counter, st.cpu)
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		b = appendOne(b, "process_max_fds", "Maximum number of open file descriptors.", gauge, float64(lim.Cur))
	}
	if n, err := openFDs(); err == nil {
		b = appendOne(b, "process_open_fds", "Number of open file descriptors.", gauge, float64(n))
	}
	if stErr == nil {
		b = appendOne(b, "process_resident_memory_bytes", "Resident memory size in bytes.", gauge, st.rss)
	}
	if t, err := start(); err == nil {
		b = appendOne(b, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gauge, t)
	}
	if stErr == nil {
		b = appendOne(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.", gauge, st.vsize)
	}
	return b
}

func appendOne(b []byte, name, help string, k kind, v float64) []byte {
	return appendSample(appendHead(b, name, help, k), name, "", nil, nil, "", v)
}

// appendRuntimeSample appends a gauge read from runtime/metrics, if this
// Go has it.
func appendRuntimeSample(b []byte, name, help string, s rtmetrics.Sample) []byte {
	if s.Value.Kind() != rtmetrics.KindUint64 {
		return b
	}
	return appendOne(b, name, help, gauge, float64(s.Value.Uint64()))
}

// appendGCPauses appends the summary of the last GC pauses.
func appendGCPauses(b []byte) []byte {
	const name = "go_gc_duration_seconds"
	st := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&st)
	b = appendHead(b, name, "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", summary)
	quantile := []string{"quantile"}
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		b = appendSample(b, name, "", quantile, []string{q}, "", st.PauseQuantiles[i].Seconds())
	}
	b = appendSample(b, name, "_sum", nil, nil, "", st.PauseTotal.Seconds())
	return appendSample(b, name, "_count", nil, nil, "", float64(st.NumGC))
}

// procStat is what /proc/self/stat says of the process.
type procStat struct {
	cpu        float64 // user and system time, seconds
	startTicks float64 // start, USER_HZ ticks after boot
	vsize, rss float64 // bytes
}

func readStat() (procStat, error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(data, os.Getpagesize())
}

func parseStat(data []byte, pageSize int) (procStat, error) {
	// The command (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("metrics: /proc/self/stat: no command")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 22 {
		return procStat{}, errors.New("metrics: /proc/self/stat: too few fields")
	}
	// f[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23,
	// rss 24 (pages).
	var n [5]uint64
	for k, j := range []int{11, 12, 19, 20, 21} {
		v, err := strconv.ParseUint(f[j], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("metrics: /proc/self/stat: field %d: %w", j+3, err)
		}
		n[k] = v
	}
	return procStat{cpu: float64(n[0]+n[1]) / userHZ, startTicks: float64(n[2]), vsize: float64(n[3]), rss: float64(n[4]) * float64(pageSize)}, nil
}

// startTime returns a function reading the process's start time once:
// boot time (btime of /proc/stat) plus its start after boot.
func startTime() func() (float64, error) {
	return sync.OnceValues(func() (float64, error) {
		st, err := readStat()
		if err != nil {
			return 0, err
		}
		data, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, err
		}
		_, rest, ok := bytes.Cut(data, []byte("\nbtime "))
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		boot, err := strconv.ParseFloat(string(line), 64)
		if !ok || err != nil {
			return 0, errors.New("metrics: /proc/stat: no btime")
		}
		return boot + st.startTicks/userHZ, nil
	})
}

// openFDs counts the entries of /proc/self/fd, in batches so that memory
// stays small whatever the count.
func openFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
