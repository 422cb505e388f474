package main

import (
	"io"
	"strings"
	"testing"
)

// helpEntries reads a help text into its groups' titles, in order, and
// each flag's text (wrapped lines joined), by flag name.
func helpEntries(help string) (titles []string, flags map[string]string, group map[string]string) {
	flags, group = map[string]string{}, map[string]string{}
	var cur, title string
	for _, line := range strings.Split(help, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case line != "" && !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			title = line
			titles = append(titles, title)
			cur = ""
		case strings.HasPrefix(line, "  --") || strings.HasPrefix(line, "  -h, --"):
			name, rest, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(trimmed, "-h, "), "--"), " ")
			name, _, _ = strings.Cut(name, "=")
			cur = name
			flags[cur] = strings.TrimSpace(rest)
			group[cur] = title
		case cur != "" && trimmed != "":
			flags[cur] = strings.TrimSpace(flags[cur] + " " + trimmed)
		default:
			cur = ""
		}
	}
	return titles, flags, group
}

// serve --help lists every setting under a group, groups in a fixed
// order, each with its default (docdefault's words too, e.g. --store's)
// and its variables, and the settings read from the environment only.
func TestServeHelpGroupsSettingsWithDefaults(t *testing.T) {
	code, out, stderr := runCLI(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	titles, flags, group := helpEntries(out)
	want := []string{"Flags:"}
	for _, g := range flagGroups {
		want = append(want, g.Title)
	}
	want = append(want, "Environment only (a flag would show in ps):")
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("groups %q, want %q", titles, want)
	}
	k, _, err := newParser(&commands{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range k.Model.Children {
		if n.Name != "serve" {
			continue
		}
		for _, f := range n.Flags {
			text, ok := flags[f.Name]
			switch {
			case !ok:
				t.Errorf("--%s is not in the help", f.Name)
			case f.Name != "help" && group[f.Name] == "Flags:":
				t.Errorf("--%s has no group", f.Name)
			}
			if d := docDefault(f); d != "" && d != "`false`" {
				if want := "default " + strings.Trim(d, "`"); !strings.Contains(text, want) {
					t.Errorf("--%s: %q lacks %q", f.Name, text, want)
				}
			}
			for _, e := range f.Envs {
				if !strings.Contains(text, "$"+e) {
					t.Errorf("--%s: %q lacks $%s", f.Name, text, e)
				}
			}
		}
	}
	if !strings.Contains(out, "\n  "+envAPIToken+"\n      bearer token") {
		t.Errorf("help lacks %s:\n%s", envAPIToken, out)
	}
}
