// Command report renders docs/benchmarks.md from the output of the
// benchmarks bench/run.sh runs: the static prose is the template
// benchmarks.md.tmpl beside this file, the tables are filled in from the
// benchmark lines.
//
//	go run ./bench/report -info INFO < bench-output.txt > docs/benchmarks.md
//
// INFO is the "key: value" file run.sh writes (command, date, Go version,
// load average at start and end, elapsed seconds, each command run). A
// benchmark that was skipped or failed shows "skipped: …" or "failed: …"
// where its figures would be.
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
)

//go:embed benchmarks.md.tmpl
var docTemplate string

func main() {
	info := flag.String("info", "", "run information file written by bench/run.sh")
	procs := flag.Int("procs", runtime.GOMAXPROCS(0), "GOMAXPROCS of the benchmark run (the -N suffix of benchmark names)")
	flag.Parse()
	if err := render(os.Stdin, os.Stdout, *info, *procs, ReadMachine()); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func render(in io.Reader, out io.Writer, infoPath string, procs int, m Machine) error {
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
	t, err := template.New("benchmarks.md").Option("missingkey=error").Parse(docTemplate)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, &Report{Run: run, Machine: m, Info: inf}); err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}
