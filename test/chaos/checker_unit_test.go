package chaos

import (
	"testing"
	"time"
)

const (
	d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func s(n int) time.Duration { return time.Duration(n) * time.Second }

// cleanHistory: generation 1 then 2 of one catalog, a trigger after each
// push, reads and statuses that move forward, writes under the lease.
func cleanHistory() []op {
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return wall.Add(s(n)) }
	return []op{
		{Kind: kPush, Start: s(0), End: s(1), Catalog: "a", Gen: 1, Digest: d1, Layer: "l1", OK: true, Replica: -1},
		{Kind: kTrigger, Start: s(2), End: s(2), Catalog: "a", Replica: 0, OK: true},
		{Kind: kLease, Start: s(2), End: s(2), Wall: at(2), Catalog: "a", Replica: 0, OK: true, Expires: at(17)},
		{Kind: kPointer, Start: s(3), End: s(3), Wall: at(3), Catalog: "a", Replica: 0, OK: true, Digest: d1},
		{Kind: kStatus, Catalog: "a", RV: 10, Serving: "True", Digest: d1, LastUnpacked: at(3), Replica: -1},
		{Kind: kRead, Start: s(4), End: s(4), Catalog: "a", Replica: 1, OK: true, Digest: d1, Markers: []int{1}, Sum: "x1"},
		{Kind: kPush, Start: s(5), End: s(6), Catalog: "a", Gen: 2, Digest: d2, Layer: "l2", OK: true, Replica: -1},
		{Kind: kTrigger, Start: s(7), End: s(7), Catalog: "a", Replica: 2, OK: true},
		{Kind: kLease, Start: s(7), End: s(7), Wall: at(7), Catalog: "a", Replica: 2, OK: true, Expires: at(22)},
		{Kind: kPointer, Start: s(8), End: s(8), Wall: at(8), Catalog: "a", Replica: 2, OK: true, Digest: d2},
		{Kind: kStatus, Catalog: "a", RV: 12, Serving: "True", Digest: d2, LastUnpacked: at(8), Replica: -1},
		{Kind: kRead, Start: s(9), End: s(9), Catalog: "a", Replica: 0, OK: true, Digest: d2, Markers: []int{2}, Sum: "x2"},
		// Staler by less than the bound, from another replica: tolerated.
		{Kind: kRead, Start: s(9) + 500*time.Millisecond, End: s(10), Catalog: "a", Replica: 1, OK: true, Digest: d1, Markers: []int{1}, Sum: "x1"},
		{Kind: kPull, Layer: "l1", OK: true}, {Kind: kPull, Layer: "l2", OK: true}, {Kind: kPull, Layer: "l2", OK: true},
		{Kind: kFinal, Start: s(20), End: s(20), Catalog: "a", Replica: 0, OK: true, Digest: d2, Markers: []int{2}, Sum: "x2"},
	}
}

func TestCheckerPassesACleanHistory(t *testing.T) {
	found, tolerated := check(cleanHistory())
	for _, a := range found {
		t.Error(a)
	}
	if tolerated != 1 {
		t.Errorf("%d reads tolerated as stale, want 1", tolerated)
	}
}

// TestCheckerNamesEachViolation breaks the clean history one way at a
// time and wants the checker to name the invariant broken.
func TestCheckerNamesEachViolation(t *testing.T) {
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		invariant int
		edit      func([]op) []op
	}{
		{"status left behind an acknowledged trigger", 1, func(h []op) []op {
			return append(h, op{Kind: kStatus, Catalog: "a", RV: 13, Serving: "True", Digest: d1, LastUnpacked: wall.Add(s(9)), Replica: -1})
		}},
		{"a read mixes two generations", 2, func(h []op) []op {
			return append(h, op{Kind: kRead, Start: s(11), End: s(11), Catalog: "a", Replica: 0, OK: true, Digest: d2, Markers: []int{1, 2}, Sum: "x3"})
		}},
		{"an older generation long after a newer one", 2, func(h []op) []op {
			return append(h, op{Kind: kRead, Start: s(15), End: s(15), Catalog: "a", Replica: 1, OK: true, Digest: d1, Markers: []int{1}, Sum: "x1"})
		}},
		{"Serving goes back to False", 3, func(h []op) []op {
			return append(h, op{Kind: kStatus, Catalog: "a", RV: 11, Serving: "False", Digest: d1, LastUnpacked: wall.Add(s(3)), Replica: -1})
		}},
		{"one digest, two contents", 4, func(h []op) []op {
			return append(h, op{Kind: kRead, Start: s(12), End: s(12), Catalog: "a", Replica: 2, OK: true, Digest: d2, Markers: []int{2}, Sum: "other"})
		}},
		{"a digest pulled three times", 5, func(h []op) []op { return append(h, op{Kind: kPull, Layer: "l2", OK: true}) }},
		{"content gone after heal", 6, func(h []op) []op {
			return append(h, op{Kind: kFinal, Start: s(20), End: s(20), Catalog: "a", Replica: 1, Code: 500, Err: "content missing"})
		}},
		{"a pointer write after another replica took the lease", 7, func(h []op) []op {
			return append(h, op{Kind: kPointer, Start: s(9), End: s(9), Wall: wall.Add(s(9)), Catalog: "a", Replica: 0, OK: true, Digest: d1})
		}},
		{"a pointer write after the writer's lease lapsed", 7, func(h []op) []op {
			return append(h, op{Kind: kPointer, Start: s(30), End: s(30), Wall: wall.Add(s(30)), Catalog: "a", Replica: 2, OK: true, Digest: d2})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, _ := check(tc.edit(cleanHistory()))
			hit := false
			for _, a := range found {
				hit = hit || a.Invariant == tc.invariant
			}
			if !hit {
				t.Errorf("no anomaly of invariant %d; found %v", tc.invariant, found)
			}
		})
	}
}
