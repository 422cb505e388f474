package metrics

import (
	"strings"
	"testing"
)

func TestParseStatReadsPastAnOddCommand(t *testing.T) {
	// Fields 3 onwards of a real line; the command may hold spaces and
	// parentheses, so only the last ')' ends it.
	rest := "S 1 12 12 0 -1 4194560 1215 0 0 0 250 130 0 0 20 0 7 0 4711 1612345344 4096 18446744073709551615"
	st, err := parseStat([]byte("12 (cat) sync (x) "+rest+" 0 0\n"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{cpu: 3.8, startTicks: 4711, vsize: 1612345344, rss: 4096 * 4096}
	if st != want {
		t.Fatalf("%+v, want %+v", st, want)
	}
}

func TestParseStatRefusesGarbage(t *testing.T) {
	for _, data := range []string{
		"", "12 no parenthesis", "12 (short) S 1 2 3",
		"12 (x) " + strings.Repeat("9 ", 11) + "-5" + strings.Repeat(" 1", 10), // a negative time
		"12 (x) " + strings.Repeat("99999999999999999999999 ", 25),             // over 64 bits
		strings.Repeat(")", 1<<16),
	} {
		if st, err := parseStat([]byte(data), 4096); err == nil {
			t.Errorf("%.40q parsed: %+v", data, st)
		}
	}
}
