// Command report renders gremlins' JSON results as a table per package and
// lists the surviving mutants, for test/mutation.sh.
//
//	go run ./test/mutation/report [-survivors FILE] PKG=RESULT.json...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// results is the part of gremlins' output file read here.
type results struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// score counts one package's mutants by outcome.
type score struct {
	killed, lived, timedOut, notCovered, notViable int
	survivors                                      []string
}

// efficacy is killed (timeouts included) over killed and lived.
func (s score) efficacy() float64 {
	k := s.killed + s.timedOut
	if k+s.lived == 0 {
		return 100
	}
	return 100 * float64(k) / float64(k+s.lived)
}

func read(pkg, file string) (score, error) {
	var r results
	b, err := os.ReadFile(file)
	if err != nil {
		return score{}, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return score{}, fmt.Errorf("%s: %w", file, err)
	}
	var s score
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			switch m.Status {
			case "KILLED":
				s.killed++
			case "LIVED":
				s.lived++
				s.survivors = append(s.survivors, fmt.Sprintf("%s:%d:%d %s", path.Join(pkg, f.Name), m.Line, m.Column, m.Type))
			case "TIMED OUT":
				s.timedOut++
			case "NOT COVERED":
				s.notCovered++
			case "NOT VIABLE":
				s.notViable++
			}
		}
	}
	slices.Sort(s.survivors)
	return s, nil
}

func main() {
	survivors := flag.String("survivors", "", "write the surviving mutants to this file")
	flag.Parse()
	var all []string
	fmt.Println("| package | killed | timed out | lived | not covered | efficacy |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, arg := range flag.Args() {
		pkg, file, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "report: want PKG=FILE, got %q\n", arg)
			os.Exit(2)
		}
		s, err := read(pkg, file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %.1f%% |\n", pkg, s.killed, s.timedOut, s.lived, s.notCovered, s.efficacy())
		all = append(all, s.survivors...)
	}
	if *survivors == "" {
		return
	}
	if err := os.WriteFile(*survivors, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}
