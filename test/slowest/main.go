// Command slowest reads the output of go test -json, prints what go test
// prints without -json (each package's result; a failing package's
// output whole but for the tests that passed), and then the slowest
// top-level tests. test/run.sh pipes the whole suite through it.
//
//	go test -json ./... | go run ./test/slowest -top 15
//	go run ./test/slowest -print=false -top 15 a.json b.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	top := flag.Int("top", 0, "after the results, list this many slowest top-level tests")
	show := flag.Bool("print", true, "print the results as go test does")
	flag.Parse()
	out := io.Discard
	if *show {
		out = os.Stdout
	}
	r := newReport(out)
	if err := readAll(r, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "slowest:", err)
		os.Exit(2)
	}
	r.close()
	r.writeSlowest(os.Stdout, *top)
}

// readAll feeds the files named, or standard input when none is, to r.
func readAll(r *report, files []string) error {
	if len(files) == 0 {
		return r.read(os.Stdin)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = r.read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
