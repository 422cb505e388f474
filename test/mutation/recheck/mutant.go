package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// mutant is one of gremlins' mutants: a mutator at a 1-based line and
// byte column (the operator's first byte) of a file of the package.
type mutant struct {
	typ, file string
	line, col int
}

func (m mutant) String() string { return fmt.Sprintf("%s at %s:%d:%d", m.typ, m.file, m.line, m.col) }

var mutantRe = regexp.MustCompile(`\b([A-Z_]+) at ([^\s:]+\.go):(\d+):(\d+)`)

func parseMutant(s string) (mutant, bool) {
	m := mutantRe.FindStringSubmatch(s)
	if m == nil {
		return mutant{}, false
	}
	line, _ := strconv.Atoi(m[3])
	col, _ := strconv.Atoi(m[4])
	if _, ok := swaps[m[1]]; !ok || line < 1 || col < 1 {
		return mutant{}, false
	}
	return mutant{typ: m[1], file: m[2], line: line, col: col}, true
}

// swaps are gremlins' token replacements per mutator (v0.6.0), longest
// token first where one is a prefix of another.
var swaps = map[string][][2]string{
	"CONDITIONALS_BOUNDARY": {{"<=", "<"}, {">=", ">"}, {"<", "<="}, {">", ">="}},
	"CONDITIONALS_NEGATION": {{"==", "!="}, {"!=", "=="}, {"<=", ">"}, {">=", "<"}, {"<", ">="}, {">", "<="}},
	"ARITHMETIC_BASE":       {{"+", "-"}, {"-", "+"}, {"*", "/"}, {"/", "*"}, {"%", "*"}},
	"INVERT_NEGATIVES":      {{"-", "+"}},
	"INCREMENT_DECREMENT":   {{"++", "--"}, {"--", "++"}},
	"INVERT_LOGICAL":        {{"&&", "||"}, {"||", "&&"}},
	"INVERT_LOOPCTRL":       {{"break", "continue"}, {"continue", "break"}},
}

var errNoOperator = errors.New("no operator of this mutator at that column")

// apply returns src with the mutant's token replaced, and the changed
// line. Textual, like applying it by hand: `a || b && c` stays grouped
// as Go groups the new operators.
func (m mutant) apply(src []byte) ([]byte, string, error) {
	lines := bytes.SplitAfter(src, []byte("\n"))
	if m.line > len(lines) {
		return nil, "", fmt.Errorf("line %d past the end", m.line)
	}
	ln := lines[m.line-1]
	at := m.col - 1
	for _, sw := range swaps[m.typ] {
		if at+len(sw[0]) <= len(ln) && string(ln[at:at+len(sw[0])]) == sw[0] {
			changed := append(append(append([]byte{}, ln[:at]...), sw[1]...), ln[at+len(sw[0]):]...)
			out := bytes.Join(append(append(append([][]byte{}, lines[:m.line-1]...), changed), lines[m.line:]...), nil)
			return out, string(changed), nil
		}
	}
	return nil, "", fmt.Errorf("%w: %q", errNoOperator, bytes.TrimSpace(ln))
}
