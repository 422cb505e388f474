package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/catalogsync/catalogsync/internal/tlsreload"
)

// tlsReloader loads the TLS files when serve is given some (nil: plain
// HTTP).
func (f *serveFlags) tlsReloader(log *slog.Logger) (*tlsreload.Reloader, error) {
	if f.tls == (tlsreload.Files{}) {
		return nil, nil
	}
	tlsreload.LogTo(log)
	return tlsreload.New(f.tls)
}

// serveListener serves HTTP, or HTTPS with certificates reloaded from
// their files while ctx lasts.
func serveListener(ctx context.Context, srv *http.Server, ln net.Listener, r *tlsreload.Reloader) error {
	if r == nil {
		return srv.Serve(ln)
	}
	go r.Run(ctx)
	srv.TLSConfig = r.TLSConfig()
	return srv.ServeTLS(ln, "", "")
}
