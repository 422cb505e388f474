package main

import (
	"strings"
	"testing"
)

// Two packages run side by side: the one that passes shows its "ok" line
// only; the failing one shows its failing test whole, subtests and all,
// and nothing of the test that passed.
const interleaved = `{"Action":"start","Package":"p/ok"}
{"Action":"start","Package":"p/bad"}
{"Action":"run","Package":"p/bad","Test":"TestGood"}
{"Action":"output","Package":"p/bad","Test":"TestGood","Output":"=== RUN   TestGood\n"}
{"Action":"output","Package":"p/ok","Test":"TestFine","Output":"=== RUN   TestFine\n"}
{"Action":"output","Package":"p/bad","Test":"TestGood","Output":"--- PASS: TestGood (0.50s)\n"}
{"Action":"pass","Package":"p/bad","Test":"TestGood","Elapsed":0.5}
{"Action":"output","Package":"p/bad","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"p/bad","Test":"TestBroken/case","Output":"    x_test.go:9: want 2, got 3\n"}
{"Action":"output","Package":"p/ok","Test":"TestFine","Output":"--- PASS: TestFine (7.00s)\n"}
{"Action":"pass","Package":"p/ok","Test":"TestFine","Elapsed":7}
{"Action":"output","Package":"p/ok","Output":"PASS\n"}
{"Action":"output","Package":"p/ok","Output":"ok  \tp/ok\t7.1s\n"}
{"Action":"pass","Package":"p/ok","Elapsed":7.1}
{"Action":"fail","Package":"p/bad","Test":"TestBroken/case","Elapsed":2}
{"Action":"output","Package":"p/bad","Test":"TestBroken","Output":"--- FAIL: TestBroken (2.00s)\n"}
{"Action":"fail","Package":"p/bad","Test":"TestBroken","Elapsed":2}
{"Action":"output","Package":"p/bad","Output":"FAIL\n"}
{"Action":"output","Package":"p/bad","Output":"FAIL\tp/bad\t2.6s\n"}
{"Action":"fail","Package":"p/bad","Elapsed":2.6}
`

func TestFailingTestPrintsWholePassingOnlyTheirResult(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(strings.NewReader(interleaved)); err != nil {
		t.Fatal(err)
	}
	r.close()
	want := "ok  \tp/ok\t7.1s\n" +
		"=== RUN   TestBroken\n    x_test.go:9: want 2, got 3\n--- FAIL: TestBroken (2.00s)\nFAIL\nFAIL\tp/bad\t2.6s\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestSlowestListsTopLevelTestsLongestFirst(t *testing.T) {
	r := newReport(&strings.Builder{})
	if err := r.read(strings.NewReader(interleaved)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.writeSlowest(&out, 2)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "7.0s  TestFine") || !strings.Contains(lines[2], "2.0s  TestBroken") {
		t.Errorf("slowest:\n%s", out.String())
	}
}

// A package whose end never comes (go test killed by its timeout) is
// printed whole, the tests still running included.
func TestUnendedPackagePrintsWhole(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	in := `{"Action":"output","Package":"p/hung","Test":"TestWait","Output":"=== RUN   TestWait\n"}
{"Action":"output","Package":"p/hung","Test":"TestWait","Output":"panic: test timed out after 25m0s\n"}
not json: go test's own error
`
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r.close()
	for _, s := range []string{"not json: go test's own error\n", "p/hung did not end", "panic: test timed out"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("missing %q in\n%s", s, out.String())
		}
	}
}
