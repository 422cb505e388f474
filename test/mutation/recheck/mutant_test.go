package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseMutant(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want mutant
		ok   bool
	}{
		{"   TIMED OUT CONDITIONALS_NEGATION at parse.go:53:18", mutant{"CONDITIONALS_NEGATION", "parse.go", 53, 18}, true},
		{"    RUNNABLE INVERT_LOOPCTRL at yamlfast.go:7:3", mutant{"INVERT_LOOPCTRL", "yamlfast.go", 7, 3}, true},
		{"LIVED                        ARITHMETIC_BASE at tree.go:377:20  [+->-] x", mutant{"ARITHMETIC_BASE", "tree.go", 377, 20}, true},
		{"Killed: 23, Lived: 5, Not covered: 0", mutant{}, false},
		{"    RUNNABLE UNKNOWN_THING at a.go:1:1", mutant{}, false},
		{"    RUNNABLE ARITHMETIC_BASE at a.go:0:1", mutant{}, false},
	} {
		got, ok := parseMutant(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestApply(t *testing.T) {
	src := "package p\n\nfunc f(a, b int) bool {\n\tfor a <= b && a-b != 0 {\n\t\ta++\n\t\tbreak\n\t}\n\treturn -a > b\n}\n"
	for _, tc := range []struct {
		m    mutant
		want string // the changed line, trimmed
	}{
		{mutant{"CONDITIONALS_BOUNDARY", "f.go", 4, 8}, "for a < b && a-b != 0 {"},
		{mutant{"CONDITIONALS_NEGATION", "f.go", 4, 8}, "for a > b && a-b != 0 {"},
		{mutant{"INVERT_LOGICAL", "f.go", 4, 13}, "for a <= b || a-b != 0 {"},
		{mutant{"ARITHMETIC_BASE", "f.go", 4, 17}, "for a <= b && a+b != 0 {"},
		{mutant{"CONDITIONALS_NEGATION", "f.go", 4, 20}, "for a <= b && a-b == 0 {"},
		{mutant{"INCREMENT_DECREMENT", "f.go", 5, 4}, "a--"},
		{mutant{"INVERT_LOOPCTRL", "f.go", 6, 3}, "continue"},
		{mutant{"INVERT_NEGATIVES", "f.go", 8, 9}, "return +a > b"},
		{mutant{"CONDITIONALS_NEGATION", "f.go", 8, 12}, "return -a <= b"},
	} {
		out, line, err := tc.m.apply([]byte(src))
		if err != nil || strings.TrimSpace(line) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.m, line, err, tc.want)
			continue
		}
		// Only that line changed.
		a, b := strings.Split(src, "\n"), strings.Split(string(out), "\n")
		b[tc.m.line-1] = a[tc.m.line-1]
		if !slices.Equal(a, b) {
			t.Errorf("%s: other lines changed:\n%s", tc.m, out)
		}
	}
	for _, m := range []mutant{
		{"ARITHMETIC_BASE", "f.go", 4, 8},  // a '<' is not arithmetic
		{"INVERT_LOGICAL", "f.go", 20, 1},  // past the end
		{"INVERT_LOOPCTRL", "f.go", 6, 40}, // past the line
	} {
		if _, _, err := m.apply([]byte(src)); err == nil {
			t.Errorf("%s applied", m)
		}
	}
	if _, _, err := (mutant{"ARITHMETIC_BASE", "f.go", 4, 8}).apply([]byte(src)); !errors.Is(err, errNoOperator) {
		t.Errorf("wrong operator: %v, want errNoOperator", err)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		out  string
		err  error
		want string
	}{
		{"ok  \tx\t1.2s\n", nil, "LIVED"},
		{"--- FAIL: TestA (0.01s)\n    a_test.go:3: boom\nFAIL\n", errors.New("exit 1"), "KILLED TestA"},
		{"panic: test timed out after 1m0s\n", errors.New("exit 1"), "TIMED OUT"},
		{"# x\n./a.go:3:1: syntax error\nFAIL\tx [build failed]\n", errors.New("exit 1"), "NOT VIABLE"},
		{"panic: runtime error: index out of range [3] with length 3\n", errors.New("exit 2"), "KILLED panic: runtime error: index out of range [3] with length 3"},
	} {
		if got := verdict(tc.out, tc.err); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.out, got, tc.want)
		}
	}
}

func TestDraw(t *testing.T) {
	var ms []mutant
	for i := range 50 {
		ms = append(ms, mutant{"ARITHMETIC_BASE", "a.go", i + 1, 1})
	}
	a, b := draw(ms, 10, 7), draw(ms, 10, 7)
	if len(a) != 10 || !slices.Equal(a, b) {
		t.Fatalf("draw: %v / %v", a, b)
	}
	if !slices.IsSortedFunc(a, func(x, y mutant) int { return x.line - y.line }) {
		t.Fatalf("not in input order: %v", a)
	}
	if slices.Equal(a, draw(ms, 10, 8)) {
		t.Fatal("another seed drew the same sample")
	}
}
