package status

import (
	"slices"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/pipeline"
)

// The Progressing condition is applied by this replica's own field
// manager, named after WithWriterReplica.
func TestProgressManagerNamesReplica(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(pipeline.Event{Phase: pipeline.PhaseResolving})
	r.mustWrite()
	r.fc.mu.Lock()
	owners := slices.Clone(r.fc.owners)
	r.fc.mu.Unlock()
	if want := DefaultFieldManager + "/r1"; !slices.Contains(owners, want) {
		t.Fatalf("managers %v, want %s among them", owners, want)
	}
}

// soonest keeps the shortest positive wait.
func TestSoonest(t *testing.T) {
	var s soonest
	for _, d := range []time.Duration{0, 3 * time.Second, -time.Second, time.Second, 2 * time.Second, 0} {
		s.add(d)
	}
	if time.Duration(s) != time.Second {
		t.Fatalf("soonest %v, want 1s", time.Duration(s))
	}
}
