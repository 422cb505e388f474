// Command gen writes the sample catalog image used by the quickstart: an OCI
// layout at examples/sample-catalog holding the FBC of
// testdata/fbc/community-v4.21-3pkgs under /configs, with the catalog label.
// The output is deterministic, so regenerating it changes nothing unless the
// input changed.
//
//	go run ./examples/gen
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

func main() {
	src := flag.String("src", "testdata/fbc/community-v4.21-3pkgs/configs", "FBC directory")
	dst := flag.String("dst", "examples/sample-catalog", "OCI layout directory to write")
	tag := flag.String("tag", "v1", "tag")
	flag.Parse()
	if err := os.RemoveAll(*dst); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dig, err := imagebuild.Push(context.Background(), imagebuild.NewRegClient(),
		"ocidir://"+*dst+":"+*tag, imagebuild.FromDir(*src, "/configs"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote ocidir://%s:%s %s\n", *dst, *tag, dig)
}
