package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"syscall"
	"time"
)

// Fault kinds the nemesis injects.
const (
	fCutStore     = "cut-store"     // a replica from MinIO
	fCutAPIServer = "cut-apiserver" // a replica from kube-apiserver
	fCutRegistry  = "cut-registry"  // a replica from the registry
	fSplit        = "split"         // a replica from store, apiserver and registry; the others keep them
	fLinkDown     = "link-down"     // a replica's link to the bridge down: cut from every host
	fPause        = "pause"         // SIGSTOP longer than a lease term, then SIGCONT
	fKill         = "kill"          // SIGKILL, then start again
	fNetem        = "netem"         // a slow, lossy link (where the kernel has netem)
)

// leaseTerm is catalog.DefaultLeaseTTL, which serve uses: a pause longer
// than it lets another replica take a paused one's lease.
const leaseTerm = 15 * time.Second

// fault is one scheduled fault.
type fault struct {
	kind    string
	replica int
	silent  bool          // cuts: drop only the far side's answers, so connections hang
	hold    time.Duration // how long the fault lasts
	settle  time.Duration // healed time after it
}

func (f fault) String() string {
	s := fmt.Sprintf("%s r%d %v", f.kind, f.replica, f.hold.Round(time.Second))
	if f.silent {
		s += " silent"
	}
	return s
}

// schedule draws faults from seed until their total time reaches d.
func schedule(seed uint64, d time.Duration, netem bool) []fault {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65))
	kinds := []string{fCutStore, fCutAPIServer, fCutRegistry, fSplit, fLinkDown, fPause, fKill}
	if netem {
		kinds = append(kinds, fNetem)
	}
	var out []fault
	for total := time.Duration(0); total < d; {
		f := fault{kind: kinds[rng.IntN(len(kinds))], replica: rng.IntN(3), silent: rng.IntN(2) == 0,
			hold: time.Duration(5+rng.IntN(16)) * time.Second, settle: time.Duration(3+rng.IntN(4)) * time.Second}
		switch f.kind {
		case fPause:
			f.hold = leaseTerm + time.Duration(1+rng.IntN(8))*time.Second
		case fKill:
			f.hold = time.Duration(1+rng.IntN(4)) * time.Second
		}
		out = append(out, f)
		total += f.hold + f.settle
	}
	return out
}

// netemAvailable tells whether tc can add a netem qdisc here.
func netemAvailable(tp *topology) bool {
	h := tp.host("client")
	if err := exec.Command("ip", "netns", "exec", h.ns, "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms").Run(); err != nil {
		return false
	}
	_ = exec.Command("ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", "eth0", "root").Run()
	return true
}

// nemesis applies faults to a cluster and heals them.
type nemesis struct {
	c *cluster
}

// cutTargets are the hosts a fault separates a replica from.
func cutTargets(kind string) []string {
	switch kind {
	case fCutStore:
		return []string{"minio"}
	case fCutAPIServer:
		return []string{"kube"}
	case fCutRegistry:
		return []string{"registry"}
	case fSplit:
		return []string{"minio", "kube", "registry"}
	}
	return nil
}

// apply starts f; heal ends it.
func (n *nemesis) apply(f fault) error {
	r := n.c.replicas[f.replica]
	name := fmt.Sprintf("r%d", f.replica)
	switch f.kind {
	case fCutStore, fCutAPIServer, fCutRegistry, fSplit:
		for _, h := range cutTargets(f.kind) {
			if err := n.c.tp.cut(name, h, f.silent); err != nil {
				return err
			}
		}
	case fLinkDown:
		return n.c.tp.link(name, false)
	case fPause:
		if !r.p.signal(syscall.SIGSTOP) {
			return errNotRunning
		}
	case fKill:
		r.p.kill()
	case fNetem:
		h := n.c.tp.host(name)
		return exec.Command("ip", "netns", "exec", h.ns, "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "200ms", "50ms", "loss", "10%").Run()
	}
	return nil
}

// heal undoes every kind of fault on replica i, whatever was applied.
func (n *nemesis) heal(i int) error {
	r := n.c.replicas[i]
	name := fmt.Sprintf("r%d", i)
	for _, h := range []string{"minio", "kube", "registry"} {
		n.c.tp.mend(name, h)
	}
	if err := n.c.tp.link(name, true); err != nil {
		return err
	}
	h := n.c.tp.host(name)
	_ = exec.Command("ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", "eth0", "root").Run()
	r.p.signal(syscall.SIGCONT)
	if !r.p.running() {
		return r.p.start(90 * time.Second)
	}
	return nil
}

// run applies the schedule, one fault at a time, healing after each, and
// records each fault from its start to its heal.
func (n *nemesis) run(ctx context.Context, faults []fault) (applied int, err error) {
	for _, f := range faults {
		if ctx.Err() != nil {
			break
		}
		start := n.c.rec.now()
		aerr := n.apply(f)
		if aerr == nil {
			sleep(ctx, f.hold)
		}
		herr := n.heal(f.replica)
		o := op{Kind: kFault, Start: start, End: n.c.rec.now(), Replica: f.replica, Via: f.kind, OK: aerr == nil,
			StoreCut: f.kind != fCutAPIServer && f.kind != fCutRegistry}
		if aerr != nil {
			o.Err = aerr.Error()
		}
		n.c.rec.add(o)
		applied++
		if herr != nil {
			return applied, fmt.Errorf("heal after %s: %w", f, herr)
		}
		sleep(ctx, f.settle)
	}
	return applied, nil
}
