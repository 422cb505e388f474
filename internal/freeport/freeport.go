// Package freeport picks loopback ports for tests that must pass a server an
// address rather than a listener.
//
// A port the kernel hands out for "127.0.0.1:0" comes from the ephemeral
// range, which outgoing connections draw from too: between the test closing
// its probe listener and the server binding the port, any client connection
// on the machine (another test's MinIO or registry traffic) can take it, and
// the server fails with "address already in use". Ports below that range are
// never given to outgoing connections, so only another caller of this
// package could take one, and it draws at random from thousands.
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// low is the first port drawn: above the well-known and the registered
// ports that local services commonly use.
const low = 20000

var (
	mu    sync.Mutex
	given = map[int]bool{} // never hand out one port twice in a process
)

// Addr returns "127.0.0.1:PORT" for a port that was free a moment ago.
func Addr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(tb)))
}

// Port returns a loopback port that was free a moment ago and lies below
// the ephemeral range.
func Port(tb testing.TB) int {
	tb.Helper()
	return pick(tb, rand.IntN)
}

// pick draws ports with draw(n), which returns a number in [0, n).
func pick(tb testing.TB, draw func(int) int) int {
	tb.Helper()
	high := ephemeralStart()
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := low + draw(high-low)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		given[p] = true
		return p
	}
	tb.Fatalf("freeport: no free port in [%d, %d) after 1000 draws", low, high)
	return 0
}

// ephemeralStart reads where the kernel's ephemeral range begins, falling
// back to Linux's default where it cannot be read.
func ephemeralStart() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return linuxDefault
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= low+1000 {
		return linuxDefault
	}
	return n
}
