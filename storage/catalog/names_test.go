package catalog

import (
	"context"
	"testing"
)

// PointerKey names the object Publish swaps, so a reader's cheap Stat of
// it sees each publish as a new ETag. Covers PointerKey, which no other
// test of this package calls.
func TestPointerKeyIsPublished(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var etags []string
	for i := range 2 {
		d := digestOf(i)
		gcContent(t, s, "p", d, gcBase, 2)
		publish(t, s, "p", d, gcBase)
		in, err := s.Stat(ctx, PointerKey("p"))
		if err != nil {
			t.Fatalf("Stat(PointerKey): %v", err)
		}
		etags = append(etags, in.ETag)
	}
	if etags[0] == etags[1] {
		t.Fatalf("ETag %q unchanged by a publish", etags[0])
	}
}
