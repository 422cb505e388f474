package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// busyLoad is the 1-minute load average above which the machine counts
// as busy: half its logical processors. bench/run.sh waits for it to fall
// to this (-wait-quiet) and the document warns when it had not.
func busyLoad(threads int) float64 { return 0.5 * float64(max(threads, 1)) }

// loadAvg1 reads the 1-minute load average.
func loadAvg1() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// waitQuiet reads load every poll until it is at most busyLoad(threads)
// or limit has passed, and writes the info line saying which. It never
// fails the run: a machine that stays busy is reported, not refused.
func waitQuiet(w io.Writer, threads int, limit, poll time.Duration, load func() (float64, error), sleep func(time.Duration)) {
	var waited time.Duration
	for {
		l, err := load()
		switch {
		case err != nil:
			fmt.Fprintf(w, "quiet-wait: load unknown (%v)\n", err)
			return
		case l <= busyLoad(threads):
			fmt.Fprintf(w, "quiet-wait: %d s (load %.2f)\n", int(waited.Seconds()), l)
			return
		case waited >= limit:
			fmt.Fprintf(w, "quiet-wait: gave up after %d s (load %.2f)\n", int(waited.Seconds()), l)
			return
		}
		sleep(poll)
		waited += poll
	}
}
