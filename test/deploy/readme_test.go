package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMENamesEveryFolder: deploy/README.md's tables name every
// folder of deploy/ and every component, and stay a page a user reads.
func TestREADMENamesEveryFolder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("deploy/README.md has %d lines, the limit for a doc is 250", n)
	}
	for _, dir := range []string{"", "components"} {
		entries, err := os.ReadDir(filepath.Join(deployDir(t), dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || (dir == "" && (e.Name() == "components" || e.Name() == "base" || e.Name() == "crd")) {
				continue
			}
			name := "`" + e.Name() + "/`"
			if dir == "components" {
				name = "| `" + e.Name() + "` |"
			}
			if !strings.Contains(readme, name) {
				t.Errorf("deploy/README.md's tables do not name %s", filepath.Join(dir, e.Name()))
			}
		}
	}
}
