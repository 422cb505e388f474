// Command recheck tests listed mutants one at a time, outside gremlins:
// each is applied to the source, the package's -short tests run with a
// timeout, and the file is restored. It re-checks what gremlins reported
// as timed out on a loaded machine (a slow survivor looks the same as a
// hang), and tests a random sample of a large file's mutants.
//
//	go run ./test/mutation/recheck [-timeout 90s] [-run RE] [-sample N -seed S] [-list] [-log FILE] PKGDIR <mutants
//
// Each input line names a mutant as gremlins prints it ("... LIVED
// CONDITIONALS_NEGATION at parse.go:53:18"); other lines are skipped.
// Output: one line per mutant, its verdict (killed by the first failing
// test, LIVED, TIMED OUT, NOT VIABLE), the mutant and the changed line.
// -log also appends gremlins-style status lines to FILE.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 90*time.Second, "a mutant's test run that takes longer hangs")
	run := flag.String("run", "", "only tests matching this (go test -run)")
	sample := flag.Int("sample", 0, "test this many mutants drawn at random (0: all)")
	seed := flag.Uint64("seed", 1, "seed of -sample")
	logFile := flag.String("log", "", "append gremlins-style status lines to this file")
	list := flag.Bool("list", false, "print the mutants that would be tested, and stop")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: recheck [flags] PKGDIR <mutants")
		os.Exit(2)
	}
	ms, err := readMutants(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recheck:", err)
		os.Exit(1)
	}
	if *sample > 0 && *sample < len(ms) {
		ms = draw(ms, *sample, *seed)
	}
	if *list {
		for _, m := range ms {
			fmt.Println(m)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := runner{dir: flag.Arg(0), timeout: *timeout, run: *run, logFile: *logFile}
	for _, m := range ms {
		if ctx.Err() != nil {
			break
		}
		if err := r.check(ctx, m); err != nil {
			fmt.Fprintln(os.Stderr, "recheck:", err)
			os.Exit(1)
		}
	}
}

// runner tests mutants of the package in dir.
type runner struct {
	dir, run, logFile string
	timeout           time.Duration
}

// check applies m, runs the tests, restores the file whatever happens,
// and reports the verdict.
func (r runner) check(ctx context.Context, m mutant) error {
	path := filepath.Join(r.dir, m.file)
	orig, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	mutated, line, err := m.apply(orig)
	if err != nil {
		fmt.Printf("%-28s %s: %v\n", "NOT APPLIED", m, err)
		return nil
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return err
	}
	verdict := r.test(ctx)
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		return fmt.Errorf("restoring %s: %w", path, err)
	}
	if ctx.Err() != nil {
		return nil // interrupted: the verdict means nothing
	}
	fmt.Printf("%-28s %s  %s\n", verdict, m, strings.TrimSpace(line))
	return r.log(verdict, m)
}

// test runs the package's -short tests and names the outcome.
func (r runner) test(ctx context.Context) string {
	args := []string{"test", "-short", "-count=1", "-failfast", "-timeout", r.timeout.String()}
	if r.run != "" {
		args = append(args, "-run", r.run)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./"+filepath.Clean(r.dir))...)
	out, err := cmd.CombinedOutput()
	return verdict(string(out), err)
}

var failRe = regexp.MustCompile(`--- FAIL: (\S+)|(panic: .{0,60})`)

func verdict(out string, err error) string {
	switch {
	case err == nil:
		return "LIVED"
	case strings.Contains(out, "panic: test timed out"):
		return "TIMED OUT"
	case strings.Contains(out, "[build failed]"), strings.Contains(out, "[setup failed]"):
		return "NOT VIABLE"
	}
	if m := failRe.FindStringSubmatch(out); m != nil {
		return "KILLED " + m[1] + m[2]
	}
	return "KILLED"
}

// log appends the gremlins-style line ("      KILLED TYPE at f:l:c").
func (r runner) log(verdict string, m mutant) error {
	if r.logFile == "" {
		return nil
	}
	status := verdict
	if strings.HasPrefix(verdict, "KILLED") {
		status = "KILLED"
	}
	f, err := os.OpenFile(r.logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%12s %s at %s:%d:%d\n", status, m.typ, m.file, m.line, m.col)
	return errors.Join(err, f.Close())
}

// readMutants reads the mutants named in gremlins' output lines.
func readMutants(r io.Reader) ([]mutant, error) {
	var ms []mutant
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m, ok := parseMutant(sc.Text()); ok {
			ms = append(ms, m)
		}
	}
	return ms, sc.Err()
}

// draw picks n of ms at random (reproducible from seed), in input order.
func draw(ms []mutant, n int, seed uint64) []mutant {
	rng := rand.New(rand.NewPCG(seed, seed))
	keep := make([]bool, len(ms))
	for _, i := range rng.Perm(len(ms))[:n] {
		keep[i] = true
	}
	var out []mutant
	for i, m := range ms {
		if keep[i] {
			out = append(out, m)
		}
	}
	return out
}
