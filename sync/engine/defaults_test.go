package engine

import (
	"testing"
	"time"
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
