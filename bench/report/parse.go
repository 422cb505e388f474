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
	p := &parser{
		run:  &Run{Results: map[string]*Result{}, Skipped: map[string]string{}, Failed: map[string]string{}, Pkgs: map[string]string{}},
		msgs: map[string]*[]string{},
	}
	if procs != 1 {
		p.suffix = "-" + strconv.Itoa(procs)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := p.line(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// parser is the state of one Parse: the package being read and the log
// lines waiting for the status line they belong to.
type parser struct {
	run     *Run
	pkg     string
	suffix  string
	pending []string  // indented log lines not attached to a status line yet
	attach  *[]string // the status line's message that indented lines extend
	msgs    map[string]*[]string
	kinds   []struct{ kind, name string }
}

func (p *parser) trim(name string) string { return strings.TrimSuffix(name, p.suffix) }

// note records name's package and its place in the report's order.
func (p *parser) note(name string) {
	if _, ok := p.run.Pkgs[name]; !ok {
		p.run.Order = append(p.run.Order, name)
		p.run.Pkgs[name] = p.pkg
	}
}

// line reads one line of go test's output.
func (p *parser) line(line string) error {
	if pkg, ok := strings.CutPrefix(line, "pkg: "); ok {
		p.pkg = strings.TrimSpace(pkg)
		p.pending, p.attach = nil, nil
		return nil
	}
	if m := statusLine.FindStringSubmatch(line); m != nil {
		p.status(m[1], p.trim(m[2]))
		return nil
	}
	if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
		p.logLine(line)
		return nil
	}
	p.attach = nil
	if m := resultLine.FindStringSubmatch(line); m != nil {
		return p.result(line, m)
	}
	if strings.HasPrefix(line, "Benchmark") {
		p.pending = nil // a -v header: the logs that follow are its own
		return nil
	}
	if f := strings.Fields(line); len(f) >= 2 && f[0] == "FAIL" && strings.Contains(f[1], "/") {
		p.run.PkgFail = append(p.run.PkgFail, f[1])
	}
	return nil
}

// status reads a "--- KIND: name" line: the pending log lines, and those
// indented below it, are a SKIP's or FAIL's message.
func (p *parser) status(kind, name string) {
	msg := p.pending
	p.pending = nil
	if kind != "SKIP" && kind != "FAIL" {
		p.attach = new([]string) // BENCH and PASS logs are dropped
		return
	}
	m := &msg
	p.msgs[kind+" "+name] = m
	p.kinds = append(p.kinds, struct{ kind, name string }{kind, name})
	p.note(name)
	p.attach = m
}

// logLine reads a log entry ("    file_test.go:12: text") or its
// continuation.
func (p *parser) logLine(line string) {
	text := strings.TrimSpace(line)
	if logPrefix.MatchString(line) {
		text = "\x00" + strings.TrimSpace(logPrefix.ReplaceAllString(line, ""))
	}
	if p.attach != nil {
		*p.attach = append(*p.attach, text)
	} else {
		p.pending = append(p.pending, text)
	}
}

// result reads a benchmark's result line, matched as m.
func (p *parser) result(line string, m []string) error {
	n, _ := strconv.Atoi(m[2])
	res := &Result{Name: p.trim(m[1]), Pkg: p.pkg, N: n, Metrics: map[string]float64{}}
	f := strings.Fields(m[3])
	if len(f)%2 != 0 {
		return fmt.Errorf("benchmark line with an odd number of fields: %q", line)
	}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return fmt.Errorf("benchmark line %q: %v", line, err)
		}
		res.Metrics[f[i+1]] = v
		res.Units = append(res.Units, f[i+1])
	}
	p.note(res.Name)
	p.run.Results[res.Name] = res
	p.pending = nil
	return nil
}

// finish files each SKIP's and FAIL's message.
func (p *parser) finish() *Run {
	for _, k := range p.kinds {
		msg := firstEntry(*p.msgs[k.kind+" "+k.name])
		if k.kind == "SKIP" {
			p.run.Skipped[k.name] = msg
		} else if _, ok := p.run.Failed[k.name]; !ok || msg != "" {
			p.run.Failed[k.name] = msg
		}
	}
	return p.run
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
