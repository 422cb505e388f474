package markdown

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// entity decodes the character reference at s's start ('&'): the text
// it stands for and its length, 0 when it is none this package knows.
// Named references are the common ones only, not HTML5's 2,124 (a
// table that size is a map built at start or at first use); any other
// stays text, shown as written.
func entity(s string) (string, int) {
	end := strings.IndexByte(s[:min(len(s), 34)], ';')
	if end < 2 {
		return "", 0
	}
	name := s[1:end]
	if name[0] == '#' {
		return numericEntity(name[1:], end+1)
	}
	for i := 0; i < len(name); i++ {
		if !isLetter(name[i]) && !isDigit(name[i]) {
			return "", 0
		}
	}
	if r := namedEntity(name); r != "" {
		return r, end + 1
	}
	return "", 0
}

func numericEntity(digits string, n int) (string, int) {
	base, max := 10, 7
	if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base, max = digits[1:], 16, 6
	}
	if digits == "" || len(digits) > max {
		return "", 0
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return "", 0
	}
	r := rune(v)
	if r == 0 || !utf8.ValidRune(r) {
		r = utf8.RuneError
	}
	return string(r), n
}

// namedEntities are the named references known, "|name=text|" each: a
// constant, so nothing is built at start.
const namedEntities = "|amp=&|lt=<|gt=>|quot=\"|apos='|nbsp=\u00a0|copy=©|reg=®|trade=™|hellip=…|mdash=—|ndash=–|lsquo=‘|rsquo=’|ldquo=“|rdquo=”|laquo=«|raquo=»|bull=•|middot=·|deg=°|times=×|divide=÷|plusmn=±|micro=µ|para=¶|sect=§|euro=€|pound=£|yen=¥|cent=¢|larr=←|rarr=→|uarr=↑|darr=↓|harr=↔|rArr=⇒|hArr=⇔|le=≤|ge=≥|ne=≠|infin=∞|check=✓|shy=\u00ad|zwj=\u200d|zwnj=\u200c|ensp=\u2002|emsp=\u2003|thinsp=\u2009|"

func namedEntity(name string) string {
	i := strings.Index(namedEntities, "|"+name+"=")
	if i < 0 {
		return ""
	}
	v := namedEntities[i+len(name)+2:]
	return v[:strings.IndexByte(v, '|')]
}

// unescapeText resolves backslash escapes and character references, as
// in destinations, titles and a fence's info string.
func unescapeText(s string) string {
	if !strings.ContainsAny(s, `\&`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			i++
			b.WriteByte(s[i])
		case c == '&':
			if r, n := entity(s[i:]); n > 0 {
				b.WriteString(r)
				i += n - 1
				continue
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
