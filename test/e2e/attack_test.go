package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/imagebuild"
	"github.com/catalogsync/catalogsync/test/servers"
)

// attackMemoryLimit is the pod memory limit the deploy manifests ship; the
// replicas run with their GOMEMLIMIT.
const (
	attackMemoryLimit = 256 << 20
	attackGOMEMLIMIT  = "GOMEMLIMIT=230MiB"
)

// TestMixedAttackSparesReaders runs three replicas behind one round-robin
// front, as operator-controller reads them through a Service, while
// attackers send GraphQL queries built to crash, spin or swell a server,
// forged webhooks, slow readers and idle connections, for
// CATALOGSYNC_E2E_ATTACK (default 40 s). A well-behaved reader of /all and
// /metas through the front sees no failure, every replica lives through
// it, and no replica's peak RSS reaches the shipped memory limit.
func TestMixedAttackSparesReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the real stack")
	}
	d := 40 * time.Second
	if v := os.Getenv("CATALOGSYNC_E2E_ATTACK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("CATALOGSYNC_E2E_ATTACK: %v", err)
		}
	}
	s := newStack(t, options{replicas: 3, env: []string{attackGOMEMLIMIT}})
	s.createCatalog("attacked", "acme/attacked:v1")
	img := imagebuild.FromDir(generated(t, fbcDir("community-v4.21-3pkgs"), 40), "/configs")
	digest := s.push("acme/attacked:v1", img)
	s.waitServing("attacked", digest, 120*time.Second)
	pids := make([]int, len(s.replicas))
	for i, r := range s.replicas {
		eventually(t, "replica serves the catalog", 60*time.Second, func() bool {
			code, _ := get(t, r.URL+"/catalogs/attacked/api/v1/metas?schema=olm.package")
			return code == http.StatusOK
		})
		if pids[i] = r.Pid(); pids[i] == 0 {
			t.Fatalf("replica %d has no process", i)
		}
	}
	front := roundRobinFront(t, s.replicas)
	want := map[string][32]byte{}
	for _, p := range readerPaths {
		code, b := get(t, front+p)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", p, code)
		}
		want[p] = sha256.Sum256(b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	var st attackStats
	run := func(n int, f func(ctx context.Context, rng *rand.Rand)) {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(ctx, rand.New(rand.NewPCG(uint64(i), uint64(n))))
			}()
		}
	}
	targets := make([]string, len(s.replicas))
	for i, r := range s.replicas {
		targets[i] = r.URL
	}
	pick := func(rng *rand.Rand) string { return targets[rng.IntN(len(targets))] }
	run(4, func(ctx context.Context, rng *rand.Rand) { graphQLAttacker(ctx, rng, pick, &st) })
	run(2, func(ctx context.Context, rng *rand.Rand) { forgedHooks(ctx, rng, pick, &st) })
	run(8, func(ctx context.Context, rng *rand.Rand) { slowReader(ctx, pick(rng), &st) })
	run(1, func(ctx context.Context, _ *rand.Rand) { idleConnections(ctx, targets, 600, &st) })
	peaks := make([]int64, len(pids))
	wg.Add(1)
	go func() {
		defer wg.Done()
		samplePeaks(ctx, pids, peaks)
	}()

	reads, failures := 0, 0
	var firstFailure string
	client := &http.Client{Timeout: 2 * time.Minute}
	for ctx.Err() == nil {
		for _, p := range readerPaths {
			reads++
			if err := readOnce(client, front+p, want[p]); err != nil {
				if failures++; firstFailure == "" {
					firstFailure = err.Error()
				}
			}
		}
	}
	wg.Wait()

	t.Logf("%s of attack: %d reads by the well-behaved reader, %d failed; attackers: %s", d, reads, failures, st.String())
	for i, r := range s.replicas {
		if got := r.Pid(); got != pids[i] {
			t.Errorf("replica %d: process %d gone (now %d); log tail:\n%s", i, pids[i], got, tail(r.Log(), 2000))
		}
		hwm := vmHWM(pids[i])
		t.Logf("replica %d: peak RSS %.0f MiB (limit %d MiB)", i, float64(max(hwm, peaks[i]))/(1<<20), attackMemoryLimit>>20)
		if max(hwm, peaks[i]) >= attackMemoryLimit {
			t.Errorf("replica %d: peak RSS %d bytes reaches the %d MiB limit", i, max(hwm, peaks[i]), attackMemoryLimit>>20)
		}
	}
	if reads == 0 {
		t.Fatal("the reader made no read")
	}
	if failures > 0 {
		t.Errorf("%d of %d reads failed; first: %s", failures, reads, firstFailure)
	}
	if st.graphql.Load() == 0 || st.hooks.Load() == 0 {
		t.Errorf("attackers sent nothing: %s", st.String())
	}
}

// readerPaths are what operator-controller reads.
var readerPaths = []string{
	"/catalogs/attacked/api/v1/all",
	"/catalogs/attacked/api/v1/metas?schema=olm.package",
	"/catalogs/attacked/api/v1/metas?schema=olm.channel",
}

func readOnce(client *http.Client, u string, want [32]byte) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: reading: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", u, resp.StatusCode, tail(string(b), 200))
	}
	if sha256.Sum256(b) != want {
		return fmt.Errorf("%s: %d bytes, not the published answer", u, len(b))
	}
	return nil
}

// roundRobinFront is a reverse proxy that sends each request to the next
// replica, as a Service's virtual IP spreads connections.
func roundRobinFront(t *testing.T, replicas []*servers.Catalogsync) string {
	t.Helper()
	var next atomic.Uint64
	targets := make([]*url.URL, len(replicas))
	for i, r := range replicas {
		targets[i], _ = url.Parse(r.URL)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[next.Add(1)%uint64(len(targets))])
		},
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16},
	}
	ln, err := net.Listen("tcp", servers.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

type attackStats struct{ graphql, hooks, slow, idle atomic.Int64 }

func (s *attackStats) String() string {
	return fmt.Sprintf("%d GraphQL queries, %d forged webhooks, %d slow reads, %d idle connections",
		s.graphql.Load(), s.hooks.Load(), s.slow.Load(), s.idle.Load())
}

// graphQLAttacks are queries that crashed, spun or swelled the server:
// fragments spreading each other, list values nested deep, answers
// amplified by aliases, and aliases multiplied by fragment spreads.
var graphQLAttacks = func() []string {
	cycle := `{ olmbundles { ...A } } fragment A on OlmBundle { name ...B } fragment B on OlmBundle { image ...A }`
	deep := `{ olmpackages(limit: ` + strings.Repeat("[", 3000) + "1" + strings.Repeat("]", 3000) + `) { name } }`
	deepName := `{ olmpackages(name: ` + strings.Repeat("[", 3000) + `"x"` + strings.Repeat("]", 3000) + `) { name } }`
	var aliases, frag strings.Builder
	aliases.WriteString("{")
	frag.WriteString("fragment F on Query {")
	for i := range 50 {
		fmt.Fprintf(&aliases, " a%d: olmbundles(limit: 100, offset: %d) { name package image properties { type value } }", i, i)
		if i < 45 {
			fmt.Fprintf(&frag, " f%d: olmbundles(limit: 100, offset: %d) { name properties { type value } }", i, i)
		}
	}
	aliases.WriteString(" }")
	frag.WriteString(" }")
	spreads := "{ ...F ...F ...F ...F ...F } " + frag.String()
	return []string{cycle, deep, deepName, aliases.String(), spreads}
}()

func graphQLAttacker(ctx context.Context, rng *rand.Rand, pick func(*rand.Rand) string, st *attackStats) {
	client := &http.Client{Timeout: time.Minute}
	for ctx.Err() == nil {
		q := graphQLAttacks[rng.IntN(len(graphQLAttacks))]
		body := []byte(`{"query":` + strconv.Quote(q) + `}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, pick(rng)+"/catalogs/attacked/api/v1/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		st.graphql.Add(1)
	}
}

// forgedHooks sends webhooks with wrong secrets and signatures, and
// oversized bodies.
func forgedHooks(ctx context.Context, rng *rand.Rand, pick func(*rand.Rand) string, st *attackStats) {
	client := &http.Client{Timeout: time.Minute}
	huge := bytes.Repeat([]byte("x"), 8<<20)
	for ctx.Err() == nil {
		var req *http.Request
		switch rng.IntN(3) {
		case 0:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, pick(rng)+"/hooks/registry",
				strings.NewReader(`{"events":[{"action":"push","target":{"repository":"acme/attacked","tag":"v1"}}]}`))
			req.Header.Set("Authorization", "forged-"+strconv.Itoa(rng.IntN(1e6)))
			req.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
		case 1:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, pick(rng)+"/hooks/ci", strings.NewReader(`{"image":"x"}`))
			req.Header.Set("X-Signature-256", "sha256="+strings.Repeat("0", 64))
		default:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, pick(rng)+"/hooks/registry", bytes.NewReader(huge))
			req.Header.Set("Authorization", "forged")
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		st.hooks.Add(1)
	}
}

// slowReader asks for /all and reads its answer a few bytes at a time.
func slowReader(ctx context.Context, target string, st *attackStats) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target+"/catalogs/attacked/api/v1/all", nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			continue
		}
		buf := make([]byte, 16)
		for ctx.Err() == nil {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		resp.Body.Close()
		st.slow.Add(1)
	}
}

// idleConnections holds up to n connections per target open, sending
// nothing or half a request header, and opens new ones as the server
// closes them.
func idleConnections(ctx context.Context, targets []string, n int, st *attackStats) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for ctx.Err() == nil {
		open := conns[:0]
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
				c.Close()
				continue
			}
			open = append(open, c)
		}
		conns = open
		for _, tgt := range targets {
			for i := 0; len(conns) < n*len(targets) && i < n/4 && ctx.Err() == nil; i++ {
				d := net.Dialer{Timeout: time.Second}
				c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(tgt, "http://"))
				if err != nil {
					break
				}
				if i%2 == 0 {
					_, _ = c.Write([]byte("GET /catalogs/attacked/api/v1/all HTTP/1.1\r\nHost: x\r\n"))
				}
				conns = append(conns, c)
				st.idle.Add(1)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	ok := errors.As(err, &ne)
	return ok && ne.Timeout()
}

// samplePeaks records each process's highest VmRSS seen until ctx ends.
func samplePeaks(ctx context.Context, pids []int, peaks []int64) {
	for ctx.Err() == nil {
		for i, pid := range pids {
			peaks[i] = max(peaks[i], procStatusBytes(pid, "VmRSS:"))
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func vmHWM(pid int) int64 { return procStatusBytes(pid, "VmHWM:") }

func procStatusBytes(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
