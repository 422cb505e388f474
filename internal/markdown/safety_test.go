package markdown

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// tagRE is what may follow a '<' in HTML's output: the tags this
// package writes, each with only the attributes it writes.
var tagRE = regexp.MustCompile(`^<(?:/(?:p|h[3-6]|em|strong|code|pre|blockquote|ul|ol|li|a)>|(?:p|h[3-6]|em|strong|pre|blockquote|ul|li|hr|br)>|code(?: class="language-[^"<>]*")?>|ol(?: start="[0-9]+")?>|a href="([^"<>]*)"(?: title="[^"<>]*")? rel="nofollow noopener noreferrer">)`)

// checkSafe says what in out is not allowed: a '<' that starts no
// allowed tag, an href that is not an http or https address, invalid
// UTF-8.
func checkSafe(out string) error {
	if !utf8.ValidString(out) {
		return fmt.Errorf("invalid UTF-8")
	}
	if strings.IndexByte(out, 0) >= 0 {
		return fmt.Errorf("a NUL")
	}
	for i := 0; i < len(out); {
		j := strings.IndexByte(out[i:], '<')
		if j < 0 {
			break
		}
		i += j
		m := tagRE.FindStringSubmatch(out[i:])
		if m == nil {
			return fmt.Errorf("not an allowed tag at %q", shorten(out[i:], 80))
		}
		if m[1] != "" {
			href := html.UnescapeString(m[1])
			u, err := url.Parse(href)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
				!(strings.HasPrefix(strings.ToLower(href), "http://") || strings.HasPrefix(strings.ToLower(href), "https://")) {
				return fmt.Errorf("href %q", href)
			}
		}
		i += len(m[0])
	}
	return nil
}
