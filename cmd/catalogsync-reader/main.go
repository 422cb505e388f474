// Command catalogsync-reader serves the catalogs a catalogsync deployment
// publishes, from its store, read-only: the content catalogd serves
// (/catalogs/{name}/api/v1/all, metas and graphql), /healthz, /readyz and
// /metrics. It pulls no image and writes nothing, so read-only store
// credentials suffice. It links none of the sync, registry and cluster
// code, and so starts in a few milliseconds: replicas scaled from zero for
// a request, or one per cluster of a fleet reading a shared bucket.
//
//	catalogsync-reader [--store DIR | --s3-bucket B ...] [--addr :8080]
package main

import (
	"context"
	"io"
	"os"

	"github.com/alecthomas/kong"

	"github.com/catalogsync/catalogsync/internal/cli"
)

const name = "catalogsync-reader"

// readerCmd is the command line, declared in internal/cli (the settings
// table documents it).
type readerCmd struct {
	cli.Reader `embed:""`
}

var options = cli.Options{
	Name:        name,
	Description: "Serve the catalogs a catalogsync deployment publishes, from its store, read-only.",
	Groups: []kong.Group{
		{Key: "store", Title: "Store:"},
		{Key: "http", Title: "Serving:"},
		{Key: "access", Title: "Access and TLS:"},
		{Key: "log", Title: "Logging:"},
	},
}

func main() {
	ctx := cli.StopOnSignal(name)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args and serves until ctx ends; it returns the exit code:
// 2 for a mistake in the settings, 1 for any other failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c readerCmd
	_, from, err := cli.Parse(&c, args, stdout, stderr, options)
	if err == nil {
		err = c.run(ctx, from, stderr)
	}
	return cli.ExitCode(stderr, name, err)
}
