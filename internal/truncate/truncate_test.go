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
