package bench

import "testing"

// The summary's files line, as the incremental sync prints it, and the
// summary of a catalogsync without it.
func TestSyncFiles(t *testing.T) {
	for _, c := range []struct {
		stdout        string
		files, reused int
	}{
		{"catalog \"bench\": published sha256:ab (1s)\n  objects     10 (1 packages)\n  files       33 (32 reused)\n  phases      pulling 1s\n", 33, 32},
		{"  files       528 (0 reused)\n", 528, 0},
		{"  files       7\n", 7, 0},
		{"catalog \"bench\": published sha256:ab (1s)\n  objects     10 (1 packages)\n", 0, 0},
		{"  profiles    3 (2 reused)\n", 0, 0},
	} {
		files, reused := syncFiles(c.stdout)
		if files != c.files || reused != c.reused {
			t.Errorf("syncFiles(%q) = %d, %d; want %d, %d", c.stdout, files, reused, c.files, c.reused)
		}
	}
}
