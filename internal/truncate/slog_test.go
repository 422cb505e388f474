package truncate

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

type valuer struct{ s string }

func (v valuer) LogValue() slog.Value { return slog.StringValue(v.s) }

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

// TestHandler: every text value of a record, in groups, in WithAttrs,
// behind a LogValuer or a Stringer, reaches the log bounded and clean;
// numbers stay numbers.
func TestHandler(t *testing.T) {
	huge := strings.Repeat("\x1bx", 5<<20) // 10 MB
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("base", huge)
	log.WithGroup("g").Warn("sync failed "+huge, "err", errors.New(huge), "name", huge,
		"v", valuer{huge}, "s", stringer{huge}, "list", []string{huge}, slog.Group("in", "deep", huge), "n", 42)
	line := buf.String()
	// 8 values and the message, each at most Log bytes (twice that once
	// quoted: a replacement is printed as 3 bytes, an escape as 6).
	if len(line) > 9*2*int(Log)+512 {
		t.Fatalf("a log line of %d bytes", len(line))
	}
	if strings.Contains(line, "\x1b") || strings.Contains(line, `\x1b`) {
		t.Error("an escape character reached the log")
	}
	for _, k := range []string{"base=", "g.err=", "g.name=", "g.v=", "g.s=", "g.list=", "g.in.deep=", "g.n=42"} {
		if !strings.Contains(line, k) {
			t.Errorf("log line lacks %s", k)
		}
	}
}
