package pipeline

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// TestErrorLogValueBounded: a failed sync whose error quotes megabytes
// of a hostile image logs at most truncate.Log bytes of it, whatever the
// handler.
func TestErrorLogValueBounded(t *testing.T) {
	se := &Error{Phase: PhaseValidating, Reason: ReasonInvalidCatalog, Err: errors.New(strings.Repeat("package \"X\x1b\": invalid\n", 1<<18))}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Warn("sync failed", "err", se)
	if n := buf.Len(); n > 2*int(truncate.Log) {
		t.Fatalf("a log line of %d bytes", n)
	}
	if !strings.Contains(buf.String(), "InvalidCatalog (Validating, terminal)") {
		t.Fatalf("the error's start is lost: %.200s", buf.String())
	}
}
