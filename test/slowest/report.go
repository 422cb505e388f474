package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is a line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events name the package here
	Test       string
	Output     string
	Elapsed    float64
}

// line is an output line and the top-level test it belongs to ("" for
// the package's own).
type line struct{ test, text string }

type pkgLog struct {
	lines []line
	ended map[string]string // top-level test -> pass, fail or skip
}

type timing struct {
	pkg, test string
	seconds   float64
}

// report holds each package's output until the package ends: go test
// -json interleaves packages run side by side, and a result printed
// whole is one a reader can follow.
type report struct {
	w     io.Writer
	pkgs  map[string]*pkgLog
	order []string // packages in the order first seen
	times []timing
}

func newReport(w io.Writer) *report { return &report{w: w, pkgs: map[string]*pkgLog{}} }

// read feeds every event of r; a line that is not JSON (go test's own
// errors, a build failure printed plainly) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Action == "" {
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.feed(ev)
	}
	return sc.Err()
}

func (r *report) feed(ev event) {
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(r.w, ev.Output)
	case ev.Package == "":
	case ev.Action == "output":
		p := r.pkg(ev.Package)
		p.lines = append(p.lines, line{topLevel(ev.Test), ev.Output})
	case ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip":
	case ev.Test == "":
		r.flush(ev.Package, ev.Action == "fail")
	case !strings.Contains(ev.Test, "/"):
		r.pkg(ev.Package).ended[ev.Test] = ev.Action
		if ev.Action != "skip" {
			r.times = append(r.times, timing{ev.Package, ev.Test, ev.Elapsed})
		}
	}
}

func (r *report) pkg(name string) *pkgLog {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgLog{ended: map[string]string{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

// flush prints a package that ended: its own lines ("ok", "FAIL") and,
// when it failed, every line but those of the tests that passed or were
// skipped, so that a failing test or a panic shows whole.
func (r *report) flush(name string, failed bool) {
	p := r.pkg(name)
	for _, l := range p.lines {
		switch {
		case l.test == "" && l.text == "PASS\n":
		case l.test == "", failed && p.ended[l.test] != "pass" && p.ended[l.test] != "skip":
			fmt.Fprint(r.w, l.text)
		}
	}
	delete(r.pkgs, name)
}

// close prints, whole, the packages whose end never came (go test killed
// or its output cut).
func (r *report) close() {
	for _, name := range r.order {
		if _, open := r.pkgs[name]; open {
			fmt.Fprintf(r.w, "slowest: %s did not end; its output:\n", name)
			r.flush(name, true)
		}
	}
}

func (r *report) writeSlowest(w io.Writer, n int) {
	if n <= 0 || len(r.times) == 0 {
		return
	}
	slices.SortStableFunc(r.times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(w, "== the %d slowest tests\n", min(n, len(r.times)))
	for _, t := range r.times[:min(n, len(r.times))] {
		fmt.Fprintf(w, "%8.1fs  %-45s %s\n", t.seconds, t.test, t.pkg)
	}
}

// topLevel is the top-level test a test or subtest name belongs to.
func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}
