package graphql

import (
	"fmt"
	"strings"
	"testing"
)

func repeat(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i, i+1)
	}
	return b.String()
}

// TestCheckRefuses: every document the library cannot handle safely is
// refused by check, with a message naming the limit; the documents
// catalogd accepts within its limits pass.
func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct{ name, query, refusal string }{
		{"fragment-cycle", "{ olmbundles { ...A } } fragment A on OlmBundle { name ...B } fragment B on OlmBundle { image ...A }", `cannot spread fragment "A" within itself`},
		{"self-spread", "{ olmbundles { ...A } } fragment A on OlmBundle { name ...A }", "within itself"},
		{"cycle-in-unused-fragments", "{ summary { totalSchemas } } fragment A on OlmBundle { ...B } fragment B on OlmBundle { ...A }", "within itself"},
		{"cycle-through-inline-fragment", "{ olmbundles { ...A } } fragment A on OlmBundle { ... on OlmBundle { name ...A } }", "within itself"},
		{"list-value-nested", "{ olmpackages(limit: " + strings.Repeat("[", 1000) + "1" + strings.Repeat("]", 1000) + ") { name } }", "maximum nesting of 32"},
		{"object-value-nested", "{ olmpackages(name: " + strings.Repeat("{a: ", 40) + "1" + strings.Repeat("}", 40) + ") { name } }", "maximum nesting of 32"},
		{"selections-nested", strings.Repeat("{ a ", 40) + strings.Repeat("}", 40), "maximum nesting of 32"},
		{"unclosed-brackets", "{ olmpackages(limit: " + strings.Repeat("[", 5000), "maximum nesting of 32"},
		{"aliases-through-fragments", "{ olmbundles { ...F ...F ...F ...F ...F } } fragment F on OlmBundle {" + repeat(45, " x%[1]d: name") + " }", "maximum alias count of 50"},
		{"fields-through-fragments", "{ olmbundles { ...F ...F ...F ...F ...F ...F } } fragment F on OlmBundle {" + strings.Repeat(" name", 90) + " }", "maximum field count of 500"},
		{"spreads-doubling", "{ olmbundles { ...F0 } }" + repeat(30, " fragment F%d on OlmBundle { ...F%[2]d ...F%[2]d }") + " fragment F30 on OlmBundle { name }", "maximum"},
		{"depth-through-second-spread", "{ olmbundles { ...F } a: olmbundles { properties { ... on OlmBundleProperties { ...G } } } } fragment F on OlmBundle { name } fragment G on OlmBundleProperties { ... on OlmBundleProperties { ... on OlmBundleProperties { ... on OlmBundleProperties { ... on OlmBundleProperties { ... on OlmBundleProperties { ... on OlmBundleProperties { type } } } } } } }", "maximum depth of 10"},
		{"nodes", "{ olmbundles(limit: [" + strings.Repeat("1 ", 4100) + "]) { name } }", "maximum node count of 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.query)
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.refusal)
			}
		})
	}
}

// TestCheckAccepts: documents within the limits, fragments spread more
// than once and introspection's fragments included, pass.
func TestCheckAccepts(t *testing.T) {
	for _, q := range []string{
		"query Q { olmbundles(limit: 3) { ...B } a: olmbundles { ...B } } fragment B on OlmBundle { name package image }",
		"{ olmbundles { ...F ...F } } fragment F on OlmBundle {" + repeat(25, " x%[1]d: name") + " }",
		`{ olmpackages(name: "[{\"not\": [nested]}]") { name } }`,
	} {
		if _, err := check(q); err != nil {
			t.Errorf("%.80s: %v", q, err)
		}
	}
}
