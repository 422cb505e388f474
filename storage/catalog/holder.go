package catalog

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ThisProcess returns the lease holder identity of the calling process:
// replica as its readable name, a random instance, the host and PID that
// let a successor on the same host see it is gone, and when it started.
func ThisProcess(replica string) LeaseHolder {
	return LeaseHolder{Replica: replica, Instance: rand.Text()[:16], Host: hostIdentity(), PID: os.Getpid(), Started: time.Now()}
}

// hostIdentity names the kernel boot and PID namespace this process runs
// in, so PIDs are comparable only between processes that share both: a
// process elsewhere with the same host name (another node, another
// container) never takes a holder for dead. Empty when it cannot be told.
// Read once: a serve start makes a holder for each of its parts.
var hostIdentity = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	name, _ := os.Hostname()
	sum := sha256.Sum256([]byte(name + "\x00" + string(bytes.TrimSpace(boot)) + "\x00" + ns))
	return hex.EncodeToString(sum[:8])
})

// outlived reports whether cur, another process's lease holder, is known
// to have exited: it ran on the same host and PID namespace as h, and its
// PID is now h's own or no live process's. A lease of such a holder is
// taken over at once; any doubt leaves it to expire.
func (h LeaseHolder) outlived(cur LeaseHolder) bool {
	if h.Host == "" || cur.Host != h.Host || cur.PID <= 0 || cur.Instance == h.Instance {
		return false
	}
	return cur.PID == h.PID || !processAlive(cur.PID)
}

// succeeds reports whether h is a later process of the replica that
// holds cur: its restart (a container restart keeps the pod's name, and
// the host name, in a new PID namespace where outlived cannot tell).
// Replica names are unique per replica, so this is the predecessor, or a
// misconfigured twin, which then loses the turn once and never takes it
// back (it started first).
func (h LeaseHolder) succeeds(cur LeaseHolder) bool {
	return h.Replica != "" && cur.Replica == h.Replica && cur.Instance != h.Instance &&
		!h.Started.IsZero() && cur.Started.Before(h.Started)
}

// processAlive reports whether pid is a running (not zombie) process in
// this PID namespace.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// pid (comm) state ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
			return stat[i+2] != 'Z' && stat[i+2] != 'X'
		}
		return true
	}
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	// No /proc: ask the kernel; EPERM means it exists.
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
