package pipeline

import (
	"os"
	"runtime"
	"testing"
)

// TestOptionsKeepDefaultsForZero: a zero or empty option value keeps the
// default, as documented (a 0 worker count would start no parse at all;
// an inline size above the budget could never be read ahead).
func TestOptionsKeepDefaultsForZero(t *testing.T) {
	def := New(nil, nil)
	p := New(nil, nil, WithWorkers(0), WithFileBudget(0, 0), WithReplica(""))
	if p.workers != runtime.GOMAXPROCS(0) || p.budget != def.budget || p.inline != def.inline || p.holder.Replica != def.holder.Replica {
		t.Fatalf("zero options: workers %d budget %d inline %d replica %q; want the defaults %d %d %d %q",
			p.workers, p.budget, p.inline, p.holder.Replica, def.workers, def.budget, def.inline, def.holder.Replica)
	}
	p = New(nil, nil, WithWorkers(3), WithFileBudget(1<<20, 4<<20), WithReplica("r2"))
	if p.workers != 3 || p.budget != 1<<20 || p.inline != 1<<20 || p.holder.Replica != "r2" {
		t.Fatalf("options: workers %d budget %d inline %d replica %q; want 3, 1 MiB, 1 MiB (capped by the budget), r2",
			p.workers, p.budget, p.inline, p.holder.Replica)
	}
	if p = New(nil, nil, WithFileBudget(0, 1<<10)); p.inline != 1<<10 || p.budget != def.budget {
		t.Fatalf("inline only: budget %d inline %d", p.budget, p.inline)
	}
}

// Without WithReplica the lease names this host, so an operator can tell
// which pod holds a catalog.
func TestDefaultReplicaIsHostName(t *testing.T) {
	h, err := os.Hostname()
	if err != nil || h == "" {
		t.Skipf("no host name here: %q, %v", h, err)
	}
	if got := New(nil, nil).holder.Replica; got != h {
		t.Fatalf("default replica %q, want the host name %q", got, h)
	}
}
