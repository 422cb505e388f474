package sync

import (
	"testing"
	"time"
)

// A slow observer never blocks the sender; byte counts of one layer merge
// while it is busy, and no phase change is lost.
func TestMailboxNeverBlocksAndKeepsPhases(t *testing.T) {
	release := make(chan struct{})
	got := make(chan Event, 1000)
	m := newMailbox(ObserverFunc(func(e Event) {
		<-release
		got <- e
	}))
	start := time.Now()
	m.send(Event{Phase: PhaseResolving})
	for i := int64(1); i <= 10000; i++ {
		m.send(Event{Phase: PhasePulling, Layer: 1, BytesDone: i})
	}
	m.send(Event{Phase: PhaseValidating})
	m.send(Event{Phase: PhasePublished})
	if d := time.Since(start); d > time.Second {
		t.Fatalf("sending took %v while the observer was blocked", d)
	}
	m.close()
	close(release)
	<-m.done
	close(got)
	var phases []Phase
	var lastBytes int64
	for e := range got {
		phases = append(phases, e.Phase)
		if e.Phase == PhasePulling {
			lastBytes = e.BytesDone
		}
	}
	if len(phases) > 5 || phases[0] != PhaseResolving || phases[len(phases)-1] != PhasePublished || phases[len(phases)-2] != PhaseValidating {
		t.Fatalf("delivered %v", phases)
	}
	if lastBytes != 10000 {
		t.Fatalf("last byte count %d, want the newest (10000)", lastBytes)
	}
}

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
