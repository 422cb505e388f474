package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Every port is below the ephemeral range, distinct within the process and
// bindable when returned.
func TestPortBelowEphemeralDistinctBindable(t *testing.T) {
	high := ephemeralStart()
	seen := map[int]bool{}
	for range 200 {
		p := Port(t)
		if p < low || p >= high {
			t.Fatalf("port %d outside [%d, %d)", p, low, high)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	a := Addr(t)
	l, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("Addr %s not bindable: %v", a, err)
	}
	l.Close()
}

// A port a listener holds, or one already handed out, is skipped.
func TestPickSkipsTakenAndGiven(t *testing.T) {
	taken, old := Port(t), Port(t)
	mu.Lock()
	delete(given, taken) // only the listener now keeps it from being drawn
	mu.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := Port(t)
	mu.Lock()
	delete(given, want)
	mu.Unlock()
	draws := []int{taken - low, old - low, want - low}
	got := pick(t, func(int) int { d := draws[0]; draws = draws[1:]; return d })
	if got != want {
		t.Fatalf("pick = %d, want %d (skipping %d held and %d given)", got, want, taken, old)
	}
}
