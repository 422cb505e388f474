package fbc

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// yamlGen builds YAML documents in the style catalogs use, with tricky
// scalars and layouts mixed in, from a stream of choices. Random bytes make
// a stress test; fuzz input makes the fuzzer explore YAML structure.
type yamlGen struct {
	choices []byte
	b       strings.Builder
	clean   bool // mostly well-formed input, so the fast path is exercised
}

func (g *yamlGen) pick(n int) int {
	if len(g.choices) == 0 {
		return 0
	}
	c := g.choices[0]
	g.choices = g.choices[1:]
	return int(c) % n
}

var genScalars = []string{
	"plain", "two words", "true", "yes", "No", "on", "OFF", "y", "~", "null", "0", "-0", "1", "-12", "+7", "0x1F", "017", "0o17",
	"0b101", "-0b11", "1_000", "1.5", ".5", "-.5e3", "1e21", "1e400", "3.", "12345678901234567890", "123456789012345678901234",
	"1.0.0", "v0.1.0", "2021-02-21T00:00:00Z", "a#b", "a:b", "http://x/y#z", "-x", "<<", "x<y>&z", "é✓😀", "[x]", "{x}",
	"a, b", "50%", "'", "\"", "a'b", "x\\y", "@", "`", "!x", "&a", "*a", "? x", ": x", "- x", "-", "a: b", "a #c", "#c",
	".inf", ".nan", "0.", "00", "08", "1e", "+", ".", "_", "1__0", "0x_1", "+0x1", "-0x1", "9223372036854775808", "-9223372036854775809",
}

var genQuotedBodies = []string{
	"", "x", "a b", "it''s", "a\\nb", "tab\\there", "\\u00e9\\U0001F600", "\\x41\\\\", "\\\"q\\\"", "line\n  next", "para\n\n  next",
	"esc\\\n  joined", "trail  \n  lead", "\\ lead", "a\\/b", "\\0\\a\\e", "bad\\q", "\\ud800", "#", ": colon", "x\n\n\n  y",
}

var genBlockLines = []string{"text", "  more", "", "   ", "    deep", "# not a comment", "- item", "key: v", "\"q\"", " lead", "tail ", "   \t"}

func (g *yamlGen) indent(n int) {
	for range n {
		g.b.WriteByte(' ')
	}
}

func (g *yamlGen) key() string {
	switch g.pick(8) {
	case 0:
		return "'" + []string{"q k", "a:b", "", "it''s"}[g.pick(4)] + "'"
	case 1:
		return "\"" + []string{"d\\tk", "x", "é", "a b"}[g.pick(4)] + "\""
	case 2:
		if g.clean {
			return genScalars[g.pick(41)]
		}
		return genScalars[g.pick(len(genScalars))]
	default:
		return []string{"name", "schema", "package", "image", "entries", "replaces", "skips", "value", "type", "Name", "a.b/c", "k-1"}[g.pick(12)]
	}
}

// scalar writes a scalar value for a collection at column parent.
func (g *yamlGen) scalar(parent int) {
	if g.clean {
		switch g.pick(4) {
		case 0:
			g.b.WriteString("'" + []string{"a b", "it''s", "x\n  y", ""}[g.pick(4)] + "'\n")
		case 1:
			g.b.WriteString("\"" + genQuotedBodies[g.pick(17)] + "\"\n")
		default:
			g.b.WriteString(genScalars[g.pick(41)] + "\n")
		}
		return
	}
	switch g.pick(6) {
	case 0:
		g.b.WriteString("'" + strings.ReplaceAll(genQuotedBodies[g.pick(len(genQuotedBodies))], "\\", "") + "'")
	case 1:
		g.b.WriteString("\"" + genQuotedBodies[g.pick(len(genQuotedBodies))] + "\"")
	case 2:
		g.b.WriteString([]string{"|", "|-", "|+", ">", ">-", "|2", "|1-", ">+", "| # c", "|0"}[g.pick(10)])
		g.b.WriteByte('\n')
		ind := parent + 1 + g.pick(3)
		for range 1 + g.pick(4) {
			l := genBlockLines[g.pick(len(genBlockLines))]
			if l != "" {
				g.indent(ind)
			}
			g.b.WriteString(l)
			g.b.WriteByte('\n')
		}
		return
	case 3:
		// multi-line plain
		g.b.WriteString(genScalars[g.pick(len(genScalars))])
		for range g.pick(3) {
			g.b.WriteByte('\n')
			if g.pick(3) == 0 {
				g.b.WriteByte('\n')
			}
			g.indent(parent + g.pick(4))
			g.b.WriteString(genScalars[g.pick(len(genScalars))])
		}
	case 4:
		g.b.WriteString([]string{"{}", "[]", "{ }", "[a]", "{a: 1}", "", "# c", "&x a", "*x", "!!str 1"}[g.pick(10)])
	default:
		g.b.WriteString(genScalars[g.pick(len(genScalars))])
	}
	if g.pick(8) == 0 {
		g.b.WriteString(" # comment")
	}
	g.b.WriteByte('\n')
}

// mapping writes keys at column col; the first one continues the current
// line when inline is set ("- key: v").
func (g *yamlGen) mapping(col, depth int, inline bool) {
	for i := range 1 + g.pick(4) {
		if i > 0 || !inline {
			g.indent(col)
		}
		g.b.WriteString(g.key())
		g.b.WriteString([]string{":", ": ", " :", ":  "}[g.pick(4)])
		g.value(col, depth)
		if g.pick(10) == 0 {
			g.indent(g.pick(6))
			g.b.WriteString([]string{"# c\n", "\n", "  \n"}[g.pick(3)])
		}
	}
}

// value writes the value after "key:" or "- " for a collection at col.
func (g *yamlGen) value(col, depth int) {
	if depth > 4 {
		g.b.WriteByte(' ')
		g.scalar(col)
		return
	}
	switch g.pick(5) {
	case 0: // nested mapping
		g.b.WriteByte('\n')
		g.mapping(col+1+g.pick(3), depth+1, false)
	case 1: // sequence, indentless or indented
		g.b.WriteByte('\n')
		g.sequence(col+g.pick(3), depth+1)
	default:
		g.b.WriteByte(' ')
		g.scalar(col)
	}
}

func (g *yamlGen) sequence(col, depth int) {
	for range 1 + g.pick(3) {
		g.indent(col)
		if g.clean {
			g.b.WriteString("- ")
		} else {
			g.b.WriteString([]string{"- ", "-  ", "-"}[g.pick(3)])
		}
		switch g.pick(4) {
		case 0: // compact mapping
			g.mapping(col+2, depth+1, true)
		case 1:
			g.value(col, depth+1)
		default:
			g.scalar(col)
		}
	}
}

func (g *yamlGen) doc() string {
	g.b.Reset()
	g.clean = g.pick(2) == 0
	if g.pick(6) == 0 {
		g.b.WriteString([]string{"---\n", "--- # c\n", "# head\n", "\n"}[g.pick(4)])
	}
	g.b.WriteString("schema: olm.x\n")
	g.mapping(0, 0, false)
	return g.b.String()
}

func TestDifferentialGenerated(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv("FBC_GEN_N"); s != "" { // for long runs
		n, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(uint64(n), 2))
	choices := make([]byte, 512)
	for range n {
		for j := range choices {
			choices[j] = byte(r.UintN(256))
		}
		g := yamlGen{choices: choices}
		doc := g.doc()
		sameResult(t, "generated", []byte(doc), false, 0)
	}
}
