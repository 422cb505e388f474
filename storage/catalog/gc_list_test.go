package catalog

import (
	"context"
	"testing"
	"time"
)

// A catalog's poll record and configured mark, which list before its
// content, do not hide that content from GC: old digests still go.
// Catches gcGroup stopping at the first key that is no digest's
// (continue turned into break).
func TestGCSeesContentAfterMarks(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ds := gcHistory(t, s, "m", 3)
	if err := MarkConfigured(ctx, s, []string{"m"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := RecordPoll(ctx, s, "m", Poll{Ref: "example.com/c:latest", Digest: ds[2]}); err != nil {
		t.Fatal(err)
	}
	rep := gcRunT(t, s, GCOptions{Keep: -1, Now: gcAfterGrace})
	if r := gcReasons(rep.Deleted); len(r) != 2 || r["m "+ds[0]] != GCOld || r["m "+ds[1]] != GCOld {
		t.Fatalf("deleted %v, want the two old digests", r)
	}
	gcCheckServes(t, s, "m")
}
