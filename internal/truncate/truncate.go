// Package truncate cuts text that came from outside to a bounded size
// without splitting a UTF-8 sequence.
package truncate

import "unicode/utf8"

// UTF8 cuts s to at most n bytes at a rune boundary, marking the cut
// with "…".
func UTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
