// Package backoff computes the jittered retry delays that the engine, the
// status writer and the event publisher share.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff computes retry delays: exponential from Min to Max with ±20%
// jitter, so replicas that failed together do not retry together.
type Backoff struct {
	Min, Max time.Duration
}

// Default starts at one second and caps at five minutes.
var Default = Backoff{Min: time.Second, Max: 5 * time.Minute}

// Delay returns the wait before retry number attempt (0-based), never less
// than what the registry asked for.
func (b Backoff) Delay(attempt int, retryAfter time.Duration) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return jitter(min(d, b.Max), retryAfter)
}

// AtCap returns the wait at the cap, as Delay gives after many failures,
// never less than what the registry asked for.
func (b Backoff) AtCap(retryAfter time.Duration) time.Duration { return jitter(b.Max, retryAfter) }

func jitter(d, retryAfter time.Duration) time.Duration {
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())) //nolint:gosec // G404: retry jitter, not a secret
	return max(d, retryAfter)
}

// Jitter spreads a period by ±10%, so replicas started together do not
// tick together.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64())) //nolint:gosec // G404: tick jitter, not a secret
}
