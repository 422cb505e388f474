package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	CPU      string // model name
	Cores    int    // physical cores (or processors, when the kernel does not say)
	Threads  int    // logical processors
	MemBytes int64
	Kernel   string
}

// ReadMachine reads the machine's description from /proc.
func ReadMachine() Machine {
	var m Machine
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		m.CPU, m.Cores, m.Threads = parseCPUInfo(f)
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		m.MemBytes = parseMemInfo(f)
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// parseCPUInfo returns the model name, the number of physical cores (by
// distinct physical id and core id) and of logical processors.
func parseCPUInfo(r io.Reader) (model string, cores, threads int) {
	type core struct{ phys, id string }
	seen := map[core]bool{}
	var cur core
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			threads++
			cur = core{}
		case "model name":
			if model == "" {
				model = v
			}
		case "physical id":
			cur.phys = v
		case "core id":
			cur.id = v
			seen[cur] = true
		}
	}
	cores = len(seen)
	if cores == 0 {
		cores = threads
	}
	return model, cores, threads
}

func parseMemInfo(r io.Reader) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

func (m Machine) String() string {
	cpu := m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	s := fmt.Sprintf("%s, %d cores", cpu, m.Cores)
	if m.Threads != m.Cores {
		s += fmt.Sprintf(" (%d threads)", m.Threads)
	}
	if m.MemBytes > 0 {
		s += fmt.Sprintf(", %.1f GiB memory", float64(m.MemBytes)/(1<<30))
	}
	return s
}
