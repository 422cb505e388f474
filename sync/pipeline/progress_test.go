package pipeline

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
