package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// StopOnSignal returns a context cancelled by the first SIGINT or SIGTERM,
// which starts a graceful stop; a second one ends the process at once, as
// an operator pressing ^C twice expects.
func StopOnSignal(name string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		s := <-sigs
		fmt.Fprintf(os.Stderr, "%s: second %s: exiting now\n", name, s)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	return ctx
}
