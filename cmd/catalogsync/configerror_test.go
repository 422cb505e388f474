package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config file's mistakes are reported at FILE:LINE:COLUMN in the
// file's own terms (YAML field names and kinds), never as JSON or Go.
func TestConfigErrorsNameLineAndField(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"unknown field": {"catalogs:\n- name: a\n  image: ocidir://x:v1\n  colour: red\n",
			`:4:3: catalogs[0]: unknown field "colour" (known: name, image, pollIntervalMinutes, signature)`},
		"wrong kind": {"catalogs:\n- name: a\n  image: ocidir://x:v1\n  pollIntervalMinutes: ten\n",
			`:4:24: catalogs[0].pollIntervalMinutes: want an integer, got the string "ten"`},
		"list for mapping": {"storage:\n  - dir: x\ncatalogs: []\n",
			`:2:3: storage: want a mapping, got a list`},
		"nested unknown": {"registries:\n- name: r\n  plain: true\ncatalogs: []\n",
			`:3:3: registries[0]: unknown field "plain"`},
		"syntax": {"catalogs:\n- name: a\n image: x\n",
			`:2: did not find expected key`},
	} {
		cfg := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(cfg, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, "poll", "--config", cfg, "--store", t.TempDir())
		if code != 1 || !strings.Contains(stderr, cfg+c.want) {
			t.Errorf("%s: exit %d, want %q:\n%s", name, code, cfg+c.want, stderr)
		}
		for _, bad := range []string{"JSON", "Go struct", "unmarshal"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("%s: the error speaks of %s:\n%s", name, bad, stderr)
			}
		}
	}
}
