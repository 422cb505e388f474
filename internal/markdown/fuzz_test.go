package markdown

import (
	"strings"
	"testing"
)

// FuzzHTML: whatever the bytes, the HTML holds only the tags and
// attributes this package writes, links only to the web, and the text
// keeps to its length.
func FuzzHTML(f *testing.F) {
	for _, d := range descriptions(f, "../../handlers/ui/testdata/edge-cases") {
		f.Add(d)
	}
	for _, s := range hostileLinks {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if err := checkSafe(HTML(src)); err != nil {
			t.Fatalf("%v in the HTML of %q", err, src)
		}
		if txt := Text(src, 50); len(txt) > 50+len("…") || strings.Contains(txt, "\x00") {
			t.Fatalf("text %q of %q", txt, src)
		}
	})
}
