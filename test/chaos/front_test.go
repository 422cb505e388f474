package chaos

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// front is the round-robin front on the client host, as a Service's
// virtual IP spreads operator-controller's reads over the replicas. It
// names the replica that answered in X-Chaos-Replica.
type front struct {
	url string
}

const replicaHeader = "X-Chaos-Replica"

func newFront(t *testing.T, client *host, replicas []*replica) *front {
	t.Helper()
	targets := make([]*url.URL, len(replicas))
	for i, r := range replicas {
		targets[i], _ = url.Parse(r.url)
	}
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(next.Add(1) % uint64(len(targets)))
			r.SetURL(targets[i])
			r.Out.Header.Set(replicaHeader, strconv.Itoa(i)) // carried to ModifyResponse
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(replicaHeader, resp.Request.Header.Get(replicaHeader))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set(replicaHeader, r.Header.Get(replicaHeader))
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
		Transport: nsTransport(client.ns),
	}
	addr := client.ip + ":8080"
	l, err := listen(client.ns, addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &front{url: "http://" + addr}
}
