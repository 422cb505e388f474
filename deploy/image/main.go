// Command image builds catalogsync's container image without a container
// engine: a static binary built as the Dockerfile builds it, on a scratch
// base holding only a CA bundle, /etc/passwd and /etc/group with the
// non-root user 65532, /tmp and the store folder. It writes an OCI layout
// and, with --push, copies the image to a registry.
//
//	go run ./deploy/image [--oci DIR] [--push REF] [--platform linux/amd64,linux/arm64]
//
// deploy/image/build.sh wraps it; deploy/README.md describes both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

// options are the command's flags.
type options struct {
	oci       string   // OCI layout folder
	tag       string   // tag in the layout
	push      string   // registry reference to copy the image to
	platforms []string // e.g. linux/amd64
	version   string   // module version stamped into the binary and labels
	caBundle  string   // PEM file copied to /etc/ssl/certs/ca-certificates.crt
	plainHTTP bool     // push over HTTP (a local test registry)
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&o.oci, "oci", "dist/oci", "OCI layout folder to write")
	fs.StringVar(&o.tag, "tag", "latest", "tag of the image in the OCI layout")
	fs.StringVar(&o.push, "push", "", "also push to this registry reference, e.g. registry.example.test/catalogsync/catalogsync:v1 (credentials from docker login)")
	plats := fs.String("platform", "linux/"+runtime.GOARCH, "comma-separated platforms; more than one writes an image index")
	fs.StringVar(&o.version, "version", "", "version for the binary and the labels (default: git describe)")
	fs.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to ship (Debian: the ca-certificates package)")
	fs.BoolVar(&o.plainHTTP, "plain-http", false, "push over plain HTTP (a local registry without TLS)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, p := range strings.Split(*plats, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.platforms = append(o.platforms, p)
		}
	}
	if len(o.platforms) == 0 {
		return o, fmt.Errorf("--platform names no platform")
	}
	return o, nil
}
