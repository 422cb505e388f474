package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// host is one network namespace on the bridge, with one address.
type host struct {
	name string // short name: r0, minio, client, ...
	ns   string // the namespace's name
	veth string // the bridge side of its link, in the switch namespace
	ip   string
}

// topology is the bridge and the hosts on it. The bridge and the bridge
// sides of the links live in a namespace of their own, the switch: the
// test host's namespace never sees a link appear, go down or vanish, so
// programs there that watch its links (a browser drops its requests with
// ERR_NETWORK_CHANGED) are untouched by the partitions.
type topology struct {
	t      testing.TB
	id     string // per test binary, so leftovers of a killed run never clash
	sw     string // the switch namespace
	bridge string
	subnet string // 198.18.N
	hosts  map[string]*host
}

// needNetns skips t, saying why, where namespaces cannot be made.
func needNetns(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the partition suite starts a cluster in network namespaces")
	}
	if runtime.GOOS != "linux" {
		t.Skip("network namespaces are Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces (ip netns, veth, a bridge)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) from iproute2")
	}
	probe := fmt.Sprintf("csprobe%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v: %s", err, out)
	}
	_ = exec.Command("ip", "netns", "del", probe).Run()
}

// hostOrder fixes each host's address: 198.18.N.<octet>.
var hostOrder = []struct {
	name  string
	octet int
}{{"client", 9}, {"r0", 10}, {"r1", 11}, {"r2", 12}, {"minio", 20}, {"kube", 30}, {"registry", 40}}

// newTopology makes the switch with its bridge and one namespace per
// host, each linked to the bridge by a veth pair made across the two
// namespaces at once. Cleanup removes them all.
func newTopology(t testing.TB) *topology {
	t.Helper()
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	tp := &topology{t: t, id: id, sw: "cs" + id + "-switch", bridge: "csbr" + id,
		subnet: fmt.Sprintf("198.18.%d", 1+os.Getpid()%250), hosts: map[string]*host{}}
	t.Cleanup(tp.destroy)
	tp.must("ip", "netns", "add", tp.sw)
	tp.must("ip", "-n", tp.sw, "link", "add", tp.bridge, "type", "bridge")
	tp.must("ip", "-n", tp.sw, "link", "set", tp.bridge, "up")
	for i, h := range hostOrder {
		hs := &host{name: h.name, ns: "cs" + id + "-" + h.name, veth: fmt.Sprintf("cs%sv%d", id, i), ip: fmt.Sprintf("%s.%d", tp.subnet, h.octet)}
		tp.hosts[h.name] = hs
		tp.must("ip", "netns", "add", hs.ns)
		tp.must("ip", "-n", tp.sw, "link", "add", hs.veth, "type", "veth", "peer", "name", "eth0", "netns", hs.ns)
		tp.must("ip", "-n", tp.sw, "link", "set", hs.veth, "master", tp.bridge, "up")
		tp.must("ip", "-n", hs.ns, "link", "set", "lo", "up")
		tp.must("ip", "-n", hs.ns, "addr", "add", hs.ip+"/24", "dev", "eth0")
		tp.must("ip", "-n", hs.ns, "link", "set", "eth0", "up")
	}
	return tp
}

// destroy deletes the namespaces; their links and the bridge go with them.
func (tp *topology) destroy() {
	for _, hs := range tp.hosts {
		_ = exec.Command("ip", "netns", "del", hs.ns).Run()
	}
	_ = exec.Command("ip", "netns", "del", tp.sw).Run()
}

func (tp *topology) must(args ...string) {
	tp.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tp.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (tp *topology) host(name string) *host { return tp.hosts[name] }

// cut drops a's packets to b and b's to a. silent cuts only b's side: a's
// packets arrive, b's answers vanish, so a's connections hang as across
// a real partition instead of failing at once.
func (tp *topology) cut(a, b string, silent bool) error {
	ha, hb := tp.hosts[a], tp.hosts[b]
	if !silent {
		if err := ipRoute(ha.ns, "add", "blackhole", hb.ip+"/32"); err != nil {
			return err
		}
	}
	return ipRoute(hb.ns, "add", "blackhole", ha.ip+"/32")
}

// mend removes every per-peer route cut added between a and b.
func (tp *topology) mend(a, b string) {
	ha, hb := tp.hosts[a], tp.hosts[b]
	_ = ipRoute(ha.ns, "del", "blackhole", hb.ip+"/32")
	_ = ipRoute(hb.ns, "del", "blackhole", ha.ip+"/32")
}

// link sets a host's link to the bridge up or down: down cuts it from
// every other host at once.
func (tp *topology) link(name string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	out, err := exec.Command("ip", "-n", tp.sw, "link", "set", tp.hosts[name].veth, state).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip link set %s %s: %v: %s", tp.hosts[name].veth, state, err, out)
	}
	return nil
}

func ipRoute(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns, "route"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s route %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

// inNetns runs f on an OS thread moved into ns. Sockets f creates belong to
// ns for their whole life, whatever thread uses them later. The thread is
// never handed back to the runtime (the goroutine exits locked), so no
// other goroutine ever runs in ns by accident.
func inNetns(ns string, f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := syscall.Open("/var/run/netns/"+ns, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer syscall.Close(fd)
		if _, _, e := syscall.RawSyscall(sysSetns, uintptr(fd), syscall.CLONE_NEWNET, 0); e != 0 {
			errc <- fmt.Errorf("setns %s: %w", ns, e)
			return
		}
		f()
		errc <- nil
	}()
	return <-errc
}

// dialer dials from inside ns.
func dialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var derr error
		if err := inNetns(ns, func() {
			d := net.Dialer{Timeout: 5 * time.Second}
			c, derr = d.DialContext(ctx, network, addr)
		}); err != nil {
			return nil, err
		}
		return c, derr
	}
}

// listen listens on addr inside ns.
func listen(ns, addr string) (net.Listener, error) {
	var l net.Listener
	var lerr error
	if err := inNetns(ns, func() { l, lerr = net.Listen("tcp", addr) }); err != nil {
		return nil, err
	}
	return l, lerr
}
