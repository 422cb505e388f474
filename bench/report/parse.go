package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Result is one benchmark's result line.
type Result struct {
	Name    string // without the -GOMAXPROCS suffix
	Pkg     string
	N       int
	Metrics map[string]float64 // by unit: "ns/op", "MB/s", "peak-RSS-MiB", ...
	Units   []string           // in the order the line gave them
}

// Run is everything read from `go test -bench` output (plain or -v).
type Run struct {
	Results map[string]*Result
	Order   []string          // names with a result, a skip or a failure, in output order
	Pkgs    map[string]string // name -> its package
	Skipped map[string]string // benchmark name -> its skip message
	Failed  map[string]string // benchmark name -> its failure message
	PkgFail []string          // packages whose test binary failed
}

// Status of one benchmark: its result, or why there is none.
func (r *Run) Status(name string) (*Result, string) {
	if res, ok := r.Results[name]; ok {
		return res, ""
	}
	// A skip or failure may be reported for the benchmark or one of its
	// parents.
	for n := name; n != ""; {
		if msg, ok := r.Skipped[n]; ok {
			return nil, "skipped: " + msg
		}
		if msg, ok := r.Failed[n]; ok {
			if msg == "" {
				msg = "see the benchmark output"
			}
			return nil, "failed: " + msg
		}
		i := strings.LastIndexByte(n, '/')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	return nil, "not run"
}

// Value returns one metric of a benchmark.
func (r *Run) Value(name, unit string) (float64, bool) {
	res, ok := r.Results[name]
	if !ok {
		return 0, false
	}
	v, ok := res.Metrics[unit]
	return v, ok
}

var (
	resultLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(\S.*)$`)
	statusLine = regexp.MustCompile(`^\s*--- (SKIP|FAIL|BENCH|PASS): (\S+)`)
	logPrefix  = regexp.MustCompile(`^\s+\S+\.go:\d+: `)
)

// Parse reads benchmark output. procs is GOMAXPROCS of the run: Go appends
// "-procs" to every benchmark name when it is not 1.
func Parse(in io.Reader, procs int) (*Run, error) {
	var pkg string
	run := &Run{Results: map[string]*Result{}, Skipped: map[string]string{}, Failed: map[string]string{}, Pkgs: map[string]string{}}
	note := func(name string) {
		if _, ok := run.Pkgs[name]; !ok {
			run.Order = append(run.Order, name)
			run.Pkgs[name] = pkg
		}
	}
	suffix := ""
	if procs != 1 {
		suffix = "-" + strconv.Itoa(procs)
	}
	trim := func(name string) string { return strings.TrimSuffix(name, suffix) }

	var pending []string // indented log lines not attached to a status line yet
	var attach *[]string // the status line's message that indented lines extend
	msgs := map[string]*[]string{}
	var kinds []struct{ kind, name string }

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			pending, attach = nil, nil
			continue
		}
		if m := statusLine.FindStringSubmatch(line); m != nil {
			name := trim(m[2])
			msg := pending
			pending = nil
			if m[1] == "SKIP" || m[1] == "FAIL" {
				p := &msg
				msgs[m[1]+" "+name] = p
				kinds = append(kinds, struct{ kind, name string }{m[1], name})
				note(name)
				attach = p
			} else {
				attach = new([]string) // BENCH and PASS logs are dropped
			}
			continue
		}
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			// A log entry ("    file_test.go:12: text") or its continuation.
			text := strings.TrimSpace(line)
			if logPrefix.MatchString(line) {
				text = "\x00" + strings.TrimSpace(logPrefix.ReplaceAllString(line, ""))
			}
			if attach != nil {
				*attach = append(*attach, text)
			} else {
				pending = append(pending, text)
			}
			continue
		}
		attach = nil
		if m := resultLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			res := &Result{Name: trim(m[1]), Pkg: pkg, N: n, Metrics: map[string]float64{}}
			f := strings.Fields(m[3])
			if len(f)%2 != 0 {
				return nil, fmt.Errorf("benchmark line with an odd number of fields: %q", line)
			}
			for i := 0; i < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return nil, fmt.Errorf("benchmark line %q: %v", line, err)
				}
				res.Metrics[f[i+1]] = v
				res.Units = append(res.Units, f[i+1])
			}
			note(res.Name)
			run.Results[res.Name] = res
			pending = nil
			continue
		}
		if strings.HasPrefix(line, "Benchmark") {
			pending = nil // a -v header: the logs that follow are its own
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "FAIL" && strings.Contains(f[1], "/") {
			run.PkgFail = append(run.PkgFail, f[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, k := range kinds {
		msg := firstEntry(*msgs[k.kind+" "+k.name])
		if k.kind == "SKIP" {
			run.Skipped[k.name] = msg
		} else if _, ok := run.Failed[k.name]; !ok || msg != "" {
			run.Failed[k.name] = msg
		}
	}
	return run, nil
}

// maxMessage bounds a skip or failure message in the document; the whole
// of it is in the benchmark output.
const maxMessage = 240

// firstEntry joins the first log entry of lines (entries start with a NUL
// mark) with its continuation lines, shortened to maxMessage.
func firstEntry(lines []string) string {
	var parts []string
	for i, l := range lines {
		if strings.HasPrefix(l, "\x00") {
			if i > 0 && len(parts) > 0 {
				break
			}
			l = l[1:]
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	msg := strings.Join(parts, " ")
	if r := []rune(msg); len(r) > maxMessage {
		msg = string(r[:maxMessage-1]) + "…"
	}
	return msg
}
