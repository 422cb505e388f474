package bench

import (
	"testing"
	"time"
)

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

// The sync's own duration ends the summary's first line; a summary without
// it (or with another line shaped alike) yields none.
func TestSyncDuration(t *testing.T) {
	for _, c := range []struct {
		stdout string
		want   time.Duration
		ok     bool
	}{
		{"catalog \"bench\": Published sha256:ab (959ms)\n  files       33 (32 reused)\n", 959 * time.Millisecond, true},
		{"catalog \"bench\": UpToDate sha256:ab (4ms)\n", 4 * time.Millisecond, true},
		{"catalog \"bench\": Published sha256:ab (1.5s)\n", 1500 * time.Millisecond, true},
		{"  phases      pulling 1s (2 layers)\n", 0, false},
		{"catalog \"bench\": Published sha256:ab (soon)\n", 0, false},
	} {
		d, ok := syncDurationOf(c.stdout)
		if d != c.want || ok != c.ok {
			t.Errorf("syncDurationOf(%q) = %v, %v; want %v, %v", c.stdout, d, ok, c.want, c.ok)
		}
	}
}
