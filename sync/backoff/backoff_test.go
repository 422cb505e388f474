package backoff

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 10 * time.Second}
	for attempt, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		d := b.Delay(attempt, 0)
		if d < base*8/10 || d > base*12/10 {
			t.Errorf("attempt %d: %v, want %v ±20%%", attempt, d, base)
		}
	}
	if d := b.Delay(0, time.Minute); d != time.Minute {
		t.Errorf("Retry-After not honoured: %v", d)
	}
}

// AtCap waits the cap (with the jitter of Delay there) whatever the
// failure count, and never less than Retry-After.
func TestBackoffAtCap(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 10 * time.Second}
	for range 20 {
		if d := b.AtCap(0); d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("AtCap %v, want 10s ±20%%", d)
		}
	}
	if d := b.AtCap(time.Minute); d != time.Minute {
		t.Errorf("Retry-After not honoured: %v", d)
	}
}
