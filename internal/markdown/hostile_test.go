package markdown

import (
	"runtime"
	"strings"
	"testing"
)

// hostileLinks try to smuggle a script, data or local address into an
// href, in the spellings browsers accept.
var hostileLinks = func() []string {
	var out []string
	for _, dest := range []string{
		"javascript:alert(1)", "JavaScript:alert(1)", "JAVASCRIPT:alert(1)", "java&#x73;cript:alert(1)",
		"&#106;avascript:alert(1)", "&#x6A;&#x61;vascript:alert(1)", "java\\script:alert(1)", "javascript&colon;alert(1)",
		"java\tscript:alert(1)", "java\x00script:alert(1)", "\x01javascript:alert(1)", "java&#10;script:alert(1)",
		"java&#x09;script:alert(1)", " javascript:alert(1)", "javascript:%61lert(1)", "jav&#x0D;ascript:alert(1)",
		"vbscript:msgbox(1)", "VBScript:msgbox(1)", "data:text/html,<script>alert(1)</script>",
		"DATA:text/html;base64,PHNjcmlwdD4=", "data:image/svg+xml,<svg onload=alert(1)>", "file:///etc/passwd",
		"//evil.example.com/x", "/\\evil.example.com", "https:javascript:alert(1)", "http:alert(1)",
		"\u200bjavascript:alert(1)", "javascript\u00a0:alert(1)", "ja\u0000vascript:alert(1)",
	} {
		out = append(out,
			"[x]("+dest+")", "![x]("+dest+")", "[x](<"+dest+">)", "<"+dest+">",
			"[x]\n\n[x]: "+dest, "[x]\n\n[x]: <"+dest+"> 'T'", "[x](https://ok.example.com \""+dest+"\")")
	}
	return out
}()

func TestNoHostileLinkBecomesHref(t *testing.T) {
	for _, src := range hostileLinks {
		out := HTML(src)
		if err := checkSafe(out); err != nil {
			t.Errorf("%q: %v in %q", src, err, out)
		}
		for _, bad := range []string{"javascript:", "vbscript:", "data:", "file:"} {
			if i := strings.Index(strings.ToLower(out), "href=\""+bad); i >= 0 {
				t.Errorf("%q: %s became an href: %q", src, bad, out)
			}
		}
	}
	// What is a web link stays one.
	if out := HTML("[x](https://ok.example.com \"javascript:alert(1)\")"); !strings.Contains(out, `<a href="https://ok.example.com" title="javascript:alert(1)"`) {
		t.Errorf("a web link with an odd title: %q", out)
	}
}

// hostile inputs: deep nesting, long runs, unclosed constructs. Each
// is built at two sizes; what rendering allocates grows at most in
// proportion (a quadratic step would show as a ratio near 4), and the
// HTML stays safe.
var hostile = map[string]func(n int) string{
	"quotes":          func(n int) string { return strings.Repeat(">", n) + " a" },
	"quote lines":     func(n int) string { return strings.Repeat(strings.Repeat("> ", 40)+"a\n", n/80) },
	"stars":           func(n int) string { return strings.Repeat("*", n) + "a" },
	"star words":      func(n int) string { return strings.Repeat("*a ", n/3) },
	"nested emphasis": func(n int) string { return strings.Repeat("*a _a ", n/12) + "a" + strings.Repeat(" a_ a*", n/12) },
	"open brackets":   func(n int) string { return strings.Repeat("[", n) + "a" },
	"nested brackets": func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("](https://x.example.com)", n/50) },
	"image nesting": func(n int) string {
		return strings.Repeat("![", n/2) + "a" + strings.Repeat("](https://x.example.com)", n/24)
	},
	"link tails": func(n int) string { return strings.Repeat("[a](", n/4) },
	"titles":     func(n int) string { return strings.Repeat(`[a](b "`, n/7) },
	"list indents": func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			b.WriteString(strings.Repeat(" ", 2*(i%200)) + "- a\n")
		}
		return b.String()
	},
	"list markers": func(n int) string { return strings.Repeat("- ", n/2) + "a" },
	"ordered":      func(n int) string { return strings.Repeat("1. ", n/3) + "a" },
	"backticks":    func(n int) string { return strings.Repeat("`", n) },
	"tick runs": func(n int) string {
		var b strings.Builder
		for i := 1; b.Len() < n; i++ {
			b.WriteString(strings.Repeat("`", i%300) + "a")
		}
		return b.String()
	},
	"comments":      func(n int) string { return strings.Repeat("<!--", n/4) },
	"tags":          func(n int) string { return strings.Repeat(`<a x="`, n/6) },
	"declarations":  func(n int) string { return strings.Repeat("<!A", n/3) },
	"entities":      func(n int) string { return strings.Repeat("&#x1F640;&bogus;&", n/17) },
	"huge line":     func(n int) string { return strings.Repeat("word ", n/5) },
	"fences":        func(n int) string { return strings.Repeat("```\n", n/4) },
	"html blocks":   func(n int) string { return strings.Repeat("<div>\n\n", n/7) },
	"ref defs":      func(n int) string { return strings.Repeat("[a]: b '\n", n/9) },
	"setext":        func(n int) string { return strings.Repeat("a\n=\n", n/4) },
	"NULs":          func(n int) string { return strings.Repeat("\x00*a*\x00", n/5) },
	"invalid UTF-8": func(n int) string { return strings.Repeat("\xff\xfe[\xc3](https://x.example.com/\xe2)", n/30) },
}

func TestHostileInputLinearAndSafe(t *testing.T) {
	const n = 50_000
	for name, build := range hostile {
		t.Run(name, func(t *testing.T) {
			// Below 64 KiB the count is the runtime's own noise (it is
			// the process's total): a quadratic input allocates gigabytes.
			small, large := allocated(build(n)), allocated(build(2*n))
			if ratio := float64(large) / float64(max(small, 64<<10)); ratio > 2.6 {
				t.Errorf("twice the input allocates %.1f times as much (%d, %d bytes)", ratio, small, large)
			}
			out := HTML(build(n))
			if err := checkSafe(out); err != nil {
				t.Errorf("unsafe HTML: %v", err)
			}
			if d := nesting(out); d > 2*maxDepth+2 {
				t.Errorf("elements nest %d deep", d)
			}
			if txt := Text(build(n), 300); len(txt) > 300+len("…") {
				t.Errorf("text of %d bytes", len(txt))
			}
		})
	}
}

// allocated is the bytes rendering src as HTML and as text allocates.
func allocated(src string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	HTML(src)
	Text(src, 300)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// nesting is how deep the elements of out nest.
func nesting(out string) int {
	depth, deepest := 0, 0
	for i := strings.IndexByte(out, '<'); i >= 0; i = strings.IndexByte(out, '<') {
		out = out[i+1:]
		switch {
		case strings.HasPrefix(out, "/"):
			depth--
		case strings.HasPrefix(out, "hr>"), strings.HasPrefix(out, "br>"):
		default:
			depth++
			deepest = max(deepest, depth)
		}
	}
	return deepest
}
