package ui

import (
	"fmt"
	"html/template"
	"time"
)

// funcs are the templates' helpers. Everything they return is plain text
// or a path built here, which html/template escapes in context.
var funcs = template.FuncMap{
	"catalogURL": catalogURL,
	"packageURL": packageURL,
	"bundleURL":  bundleURL,
	"iconURL":    func(c, p string) string { return packageURL(c, p) + "icon" },
	"changesURL": func(c string) string { return catalogURL(c) + "changes" },
	"short":      func(n int, s string) string { return shorten(s, n) },
	"digest": func(d string) string {
		if len(d) > 19 {
			return d[:19] + "…"
		}
		return d
	},
	"size": func(n int64) string {
		switch {
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
		}
		return fmt.Sprintf("%d B", n)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// plural picks the form for n: "1 channel", "2 channels".
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
}
