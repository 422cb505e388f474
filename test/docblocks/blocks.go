// Package docblocks runs the shell blocks of the project's docs that are
// fenced with the info string "sh test", as a user would type them.
package docblocks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Block is one "sh test" block and, when a "text" block follows it (only
// blank lines between), the output expected of it.
type Block struct {
	File   string
	Line   int // of the opening fence
	Script string
	Expect []string
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Parse returns the "sh test" blocks of the Markdown file at path.
func Parse(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var (
		out     []Block
		info    string // of the open fence; "" when outside one
		start   int
		body    []string
		pending = -1 // index in out of the last sh test block, until prose
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case info == "" && fence:
			info, start, body = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")), n, nil
			if info == "" {
				info = "none"
			}
		case info != "" && fence:
			switch {
			case info == "sh test":
				out = append(out, Block{File: path, Line: start, Script: strings.Join(body, "\n") + "\n"})
				pending = len(out) - 1
			case info == "text" && pending >= 0:
				for _, l := range body {
					if strings.TrimSpace(l) != "" {
						out[pending].Expect = append(out[pending].Expect, l)
					}
				}
				pending = -1
			default:
				pending = -1
			}
			info = ""
		case info == "" && strings.TrimSpace(line) != "":
			pending = -1
		default:
			body = append(body, line)
		}
	}
	if info != "" {
		return nil, fmt.Errorf("%s:%d: fence never closed", path, start)
	}
	return out, sc.Err()
}

// Missing returns the first expected line that output lacks: expected
// lines must appear in order, each as a whole line, "…" standing for any
// text; "" when all do.
func (b Block) Missing(output string) string {
	lines := strings.Split(output, "\n")
	i := 0
	for _, want := range b.Expect {
		parts := strings.Split(strings.TrimSpace(want), "…")
		for k := range parts {
			parts[k] = regexp.QuoteMeta(parts[k])
		}
		re := regexp.MustCompile(`^\s*` + strings.Join(parts, ".*") + `\s*$`)
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			return want
		}
		i++
	}
	return ""
}
