package engine

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestPollInterval(t *testing.T) {
	for _, ok := range []struct {
		in   float64
		want time.Duration
	}{{0, 0}, {1, time.Minute}, {0.5, 30 * time.Second}, {MaxPollMinutes, MaxPollMinutes * time.Minute}} {
		if d, err := PollInterval(ok.in); err != nil || d != ok.want {
			t.Errorf("%v: %v %v", ok.in, d, err)
		}
	}
	// 307445734562 minutes once wrapped round to 10 s.
	for _, bad := range []float64{-1, MaxPollMinutes + 1, 307445734562, math.MaxInt64, math.Inf(1), math.NaN()} {
		if d, err := PollInterval(bad); !errors.Is(err, ErrPollInterval) {
			t.Errorf("%v accepted as %v", bad, d)
		}
	}
}
