package engine

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxPollMinutes is the longest poll interval accepted: a year. Longer
// values (and any that would overflow a time.Duration) are refused, not
// wrapped round to something short.
const MaxPollMinutes = 366 * 24 * 60

// ErrPollInterval is returned for a poll interval out of range.
var ErrPollInterval = errors.New("pollIntervalMinutes out of range")

// PollInterval converts a pollIntervalMinutes value (config file or
// ClusterCatalog spec) to a duration: 0 means not polled; negative, NaN,
// fractions of a second or more than MaxPollMinutes are refused.
func PollInterval(minutes float64) (time.Duration, error) {
	if math.IsNaN(minutes) || minutes < 0 || minutes > MaxPollMinutes {
		return 0, fmt.Errorf("%w: %v (0 to %d)", ErrPollInterval, minutes, MaxPollMinutes)
	}
	return time.Duration(minutes * float64(time.Minute)).Round(time.Second), nil
}
