package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// A zero or negative notice interval means the default (a zero
// rate.Sometimes would log each reason once ever); a set one is used.
func TestNoticesInterval(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{0: DefaultNoticeInterval, -time.Second: DefaultNoticeInterval, time.Second: time.Second} {
		if got := NewNotices(d).every; got != want {
			t.Errorf("NewNotices(%v): every %v, want %v", d, got, want)
		}
	}
}

// The info line counts the notices logged at debug level since the last
// one, and names no count when there were none.
func TestNoticesAlsoSince(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := NewNotices(time.Hour)
	ctx := context.Background()
	for range 3 {
		n.Log(ctx, log, "k", "unmatched")
	}
	// The interval elapses (without waiting for it).
	n.mu.Lock()
	n.byKey["k"].sometimes = rate.Sometimes{Interval: time.Hour}
	n.mu.Unlock()
	n.Log(ctx, log, "k", "unmatched")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		s, _ := rec["level"].(string)
		if v, ok := rec["alsoSince"]; ok {
			s = fmt.Sprintf("%s+%v", s, v)
		}
		got = append(got, s)
	}
	if want := []string{"INFO", "DEBUG", "DEBUG", "INFO+2"}; !slices.Equal(got, want) {
		t.Errorf("levels %q, want %q", got, want)
	}
}
