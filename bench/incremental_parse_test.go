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

// The peaks `catalogsync sync` prints on stderr under
// CATALOGSYNC_PRINT_PEAK_RSS, each read on its own; a missing line is
// told apart from a zero.
func TestPeakLines(t *testing.T) {
	both := "time=x level=WARN msg=slow\npeak-anon-kib 13824\npeak-rss-kib 61440\n"
	for _, c := range []struct {
		line   string
		stderr string
		want   int64
		found  bool
	}{
		{"anon", both, 13824 << 10, true},
		{"rss", both, 61440 << 10, true},
		{"anon", "peak-rss-kib 61440\n", 0, false},
		{"anon", "peak-anon-kib 0\n", 0, true},
		{"anon", "x peak-anon-kib 5\n", 0, false},
	} {
		re := anonLine
		if c.line == "rss" {
			re = rssLine
		}
		if got, found := kibOf(re, c.stderr); got != c.want || found != c.found {
			t.Errorf("%s of %q = %d, %v; want %d, %v", c.line, c.stderr, got, found, c.want, c.found)
		}
	}
}
