package main

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// loads returns a load reader that yields ls in turn, then the last.
func loads(ls ...float64) func() (float64, error) {
	return func() (float64, error) {
		l := ls[0]
		if len(ls) > 1 {
			ls = ls[1:]
		}
		return l, nil
	}
}

func TestWaitQuietWaitsForTheLoadToFall(t *testing.T) {
	var out bytes.Buffer
	slept := 0
	waitQuiet(&out, 2, 10*time.Minute, 5*time.Second, loads(1.9, 1.4, 1.0), func(time.Duration) { slept++ })
	if got, want := out.String(), "quiet-wait: 10 s (load 1.00)\n"; got != want || slept != 2 {
		t.Errorf("got %q after %d polls, want %q after 2", got, slept, want)
	}
}

func TestWaitQuietGivesUpOnABusyMachine(t *testing.T) {
	var out bytes.Buffer
	slept := 0
	waitQuiet(&out, 2, 20*time.Second, 5*time.Second, loads(3), func(time.Duration) { slept++ })
	if got, want := out.String(), "quiet-wait: gave up after 20 s (load 3.00)\n"; got != want || slept != 4 {
		t.Errorf("got %q after %d polls, want %q after 4", got, slept, want)
	}
}

func TestWaitQuietWithoutALoadAverage(t *testing.T) {
	var out bytes.Buffer
	waitQuiet(&out, 2, time.Minute, time.Second, func() (float64, error) { return 0, errors.New("no /proc") },
		func(time.Duration) { t.Fatal("slept without a load to wait for") })
	if got, want := out.String(), "quiet-wait: load unknown (no /proc)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A limit of 0 (BENCH_QUIET_WAIT=0) checks once and does not wait.
func TestWaitQuietWithoutWaiting(t *testing.T) {
	var out bytes.Buffer
	waitQuiet(&out, 2, 0, 5*time.Second, loads(3), func(time.Duration) { t.Fatal("waited with a limit of 0") })
	if got, want := out.String(), "quiet-wait: gave up after 0 s (load 3.00)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
