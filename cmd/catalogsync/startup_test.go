package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/catalogsync/catalogsync/test/servers"
)

// maxOwnInitBytes bounds what one of our packages may allocate before main
// runs. Every process pays it, a one-shot sync included, so work that only
// serving needs (large patterns, tables) is done at first use instead.
const maxOwnInitBytes = 32 << 10

// initLine is a line of GODEBUG=inittrace=1: package, bytes allocated.
var initLine = regexp.MustCompile(`(?m)^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, \d+ allocs$`)

// TestOwnPackagesInitCheaply runs the built binary with no command (it
// prints its usage and exits) and reads the runtime's own account of each
// package's initialisation.
func TestOwnPackagesInitCheaply(t *testing.T) {
	cmd := exec.Command(servers.CatalogsyncBinary(t))
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput() // exits 2: no command
	const own = "github.com/catalogsync/catalogsync/"
	seen := 0
	for _, m := range initLine.FindAllStringSubmatch(string(out), -1) {
		if !strings.HasPrefix(m[1], own) {
			continue
		}
		seen++
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		if n > maxOwnInitBytes {
			t.Errorf("%s allocates %d bytes before main, over %d: compile or build it at first use", m[1], n, maxOwnInitBytes)
		}
	}
	// sync/fbc, storage/catalog and others initialise something; seeing
	// none means the trace was not read, not that all is well.
	if seen < 3 {
		t.Fatalf("found %d of our packages in the init trace:\n%s", seen, out)
	}
}
