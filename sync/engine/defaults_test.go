package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// The documented defaults: 4 syncs at once, a settle time of 500 ms that
// stretches to at most 5 s; WithMaxConcurrent of 0 or less keeps the cap
// (an unbuffered slot channel would let no sync start).
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		opts  []Option
		slots int
	}{
		{nil, 4},
		{[]Option{WithMaxConcurrent(0)}, 4},
		{[]Option{WithMaxConcurrent(-1)}, 4},
		{[]Option{WithMaxConcurrent(1)}, 1},
	} {
		e := New(nil, nil, nil, tc.opts...)
		if cap(e.slots) != tc.slots {
			t.Errorf("%d options: %d slots, want %d", len(tc.opts), cap(e.slots), tc.slots)
		}
		if e.settle != 500*time.Millisecond || e.maxSettle != 5*time.Second {
			t.Errorf("settle %v up to %v, want 500ms up to 5s", e.settle, e.maxSettle)
		}
	}
}

// An error that fits the history's bound is kept as it is, wrapping and
// all; a longer one is cut to the bound.
func TestBoundedErrorAtTheBound(t *testing.T) {
	base := errors.New("cause")
	fits := &pipeline.Error{Reason: pipeline.ReasonRegistry, Err: fmt.Errorf("%s: %w", strings.Repeat("x", MaxErrorBytes-len(": cause")), base)}
	if len(fits.Err.Error()) != MaxErrorBytes {
		t.Fatalf("fixture of %d bytes", len(fits.Err.Error()))
	}
	if got := boundedError(fits); got != fits || !errors.Is(got.Err, base) {
		t.Fatalf("an error of exactly %d bytes was replaced", MaxErrorBytes)
	}
	long := &pipeline.Error{Reason: pipeline.ReasonRegistry, Err: errors.New(strings.Repeat("y", MaxErrorBytes+1))}
	if got := boundedError(long); len(got.Err.Error()) > MaxErrorBytes || long.Err.Error() == got.Err.Error() {
		t.Fatalf("an error of %d bytes kept %d", MaxErrorBytes+1, len(got.Err.Error()))
	}
}
