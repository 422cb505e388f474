package truncate

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUTF8(t *testing.T) {
	if got := UTF8("short", 10); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	if got := UTF8("0123456789", 10); got != "0123456789" {
		t.Errorf("text of exactly n bytes changed: %q", got)
	}
	// Every cut of multi-byte text stays valid UTF-8 and within n bytes.
	s := strings.Repeat("é€😀a", 20)
	for n := 3; n < len(s); n++ {
		got := UTF8(s, n)
		if len(got) > n || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Fatalf("UTF8(_, %d) = %q (%d bytes)", n, got, len(got))
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
			t.Fatalf("UTF8(_, %d) is not a prefix: %q", n, got)
		}
	}
}

// TestText: outside text comes out valid UTF-8 within the limit, without
// control characters or bidirectional overrides, marked when it was cut.
func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain\tline\nnext", "plain\tline\nnext"},
		{"esc\x1b[31mred", "esc\uFFFD[31mred"},
		{"bad\xff\xfebytes", "bad\uFFFD\uFFFDbytes"},
		{"nul\x00del\x7fc1\u0085", "nul\uFFFDdel\uFFFDc1\uFFFD"},
		{"rtl\u202etxt.exe\u2066", "rtl\uFFFDtxt.exe\uFFFD"},
		{"é€😀", "é€😀"},
	} {
		if got := Text(c.in, Log); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Replacements that grow the text past the limit are cut too.
	hostile := strings.Repeat("\x1b\xff", 5000)
	for _, l := range []Limit{Log, Status, REST, UI, 10} {
		got := Text(hostile, l)
		if len(got) > int(l) || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || strings.ContainsAny(got, "\x1b") {
			t.Errorf("Text(hostile, %d) = %d bytes %q…", l, len(got), got[:min(len(got), 20)])
		}
	}
	if got := Err(nil, REST); got != "" {
		t.Errorf("Err(nil) = %q", got)
	}
	if got := UTF8("abcdef", 1); len(got) > 3 {
		t.Errorf("UTF8 to less than its mark: %q", got)
	}
}
