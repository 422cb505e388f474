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
