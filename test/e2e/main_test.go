package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain skips the whole package under -short before any setup: every
// test here needs the whole real stack.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("-short: skipped, every test needs the whole real stack")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
