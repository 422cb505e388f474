// Command report renders docs/benchmarks.md and docs/benchmarks-detail.md
// from the output of the benchmarks bench/run.sh runs: the static prose is
// in the templates beside this file (benchmarks.md.tmpl for the end-to-end
// figures, benchmarks-detail.md.tmpl for the peers and micro-benchmarks),
// the tables are filled in from the benchmark lines.
//
//	go run ./bench/report -info INFO -detail docs/benchmarks-detail.md < bench-output.txt > docs/benchmarks.md
//	go run ./bench/report -wait-quiet 10m >> INFO
//
// INFO is the "key: value" file run.sh writes (how long it waited for a
// quiet machine, command, date, Go version, load average at start and end,
// elapsed seconds, each command run). A benchmark that was skipped or
// failed shows "skipped: …" or "failed: …" where its figures would be.
package main

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/template"
	"time"
)

var (
	//go:embed benchmarks.md.tmpl
	docTemplate string
	//go:embed benchmarks-detail.md.tmpl
	detailTemplate string
)

func main() {
	info := flag.String("info", "", "run information file written by bench/run.sh")
	detail := flag.String("detail", "", "write the peers and micro-benchmarks document to this file")
	procs := flag.Int("procs", runtime.GOMAXPROCS(0), "GOMAXPROCS of the benchmark run (the -N suffix of benchmark names)")
	quiet := flag.Duration("wait-quiet", 0, "only wait up to this long for a quiet machine and print the info line saying how long it took (0: not at all)")
	flag.Parse()
	waiting := false
	flag.Visit(func(f *flag.Flag) { waiting = waiting || f.Name == "wait-quiet" })
	if waiting {
		waitQuiet(os.Stdout, ReadMachine().Threads, max(*quiet, 0), 5*time.Second, loadAvg1, time.Sleep)
		return
	}
	var detailOut bytes.Buffer
	if err := render(os.Stdin, os.Stdout, &detailOut, *info, *procs, ReadMachine()); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	if *detail != "" {
		if err := os.WriteFile(*detail, detailOut.Bytes(), 0o644); err != nil { //nolint:gosec // G306: a public project document
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
	}
}

// render writes the end-to-end document to out and the peers and
// micro-benchmarks document to detail.
func render(in io.Reader, out, detail io.Writer, infoPath string, procs int, m Machine) error {
	run, err := Parse(in, procs)
	if err != nil {
		return err
	}
	var inf Info
	if infoPath != "" {
		f, err := os.Open(infoPath)
		if err != nil {
			return err
		}
		inf, err = ParseInfo(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	if inf.Go == "" {
		inf.Go = runtime.Version()
	}
	r := &Report{Run: run, Machine: m, Info: inf}
	for _, d := range []struct {
		name, text string
		w          io.Writer
	}{{"benchmarks.md", docTemplate, out}, {"benchmarks-detail.md", detailTemplate, detail}} {
		t, err := template.New(d.name).Option("missingkey=error").Parse(d.text)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, r); err != nil {
			return err
		}
		if _, err := d.w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
