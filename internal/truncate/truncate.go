// Package truncate bounds text that came from outside (errors, names,
// messages) wherever it is logged or shown: Text cleans and cuts it to
// the limit of its destination, Handler does so for every log attribute.
package truncate

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limit is how many bytes of outside text one value may take at a
// destination.
type Limit int

// The destinations of outside text and their limits, declared once.
const (
	// Log bounds one log attribute (an error, a name), so a failed sync
	// of a hostile catalog logs kilobytes, not megabytes.
	Log Limit = 4096
	// Status bounds a ClusterCatalog condition message (the CRD allows
	// 32768 bytes): people read it, and a longer error chain is noise.
	Status Limit = 2048
	// REST bounds an error message or problem detail of an API answer.
	REST Limit = 2048
	// UI bounds a message shown on a page.
	UI Limit = 2048
)

// mark ends text that was cut.
const mark = "…"

// Text returns s fit for a destination of limit: at most limit bytes of
// valid UTF-8, cut at a rune boundary and marked with "…" when longer,
// with invalid bytes, control characters other than tab and newline, and
// bidirectional overrides (which reorder what a terminal shows) replaced
// by U+FFFD. Only the first limit bytes of s are read.
func Text(s string, limit Limit) string {
	n := int(limit)
	if len(s) > n {
		s = UTF8(s, n)
	}
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteRune(utf8.RuneError)
				continue
			}
		}
		if unsafeRune(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	// A replacement is 3 bytes where the byte it replaced was 1.
	return UTF8(b.String(), n)
}

// clean reports whether s needs no replacement.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf && (c == '\t' || c == '\n' || (c >= 0x20 && c != 0x7f)) {
			continue
		}
		if !utf8.ValidString(s[i:]) {
			return false
		}
		for _, r := range s[i:] {
			if unsafeRune(r) {
				return false
			}
		}
		return true
	}
	return true
}

func unsafeRune(r rune) bool {
	if r == '\t' || r == '\n' {
		return false
	}
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Err is Text of err's message ("" for nil).
func Err(err error, limit Limit) string {
	if err == nil {
		return ""
	}
	return Text(err.Error(), limit)
}

// UTF8 cuts s to at most n bytes at a rune boundary, marking the cut
// with "…".
func UTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
