package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// readers query a service while a scenario runs and check every answer:
// a 200 must be complete newline-delimited JSON, and is recorded by the
// hash of its body so the scenario can prove each answer was the whole old
// catalog or the whole new one, never a mix or a prefix.
type readers struct {
	urls   []string
	client *http.Client

	mu       sync.Mutex
	bodies   map[string]map[string]int // url -> body hash -> count
	ok       int
	status   map[int]int // non-200 answers by code
	connErrs int         // no answer at all (service down)
	// unsent counts ticks dropped because this client fell over a second
	// behind (a busy machine starving it): the client's own shortfall,
	// never counted against the server.
	unsent    int
	broken    []string // 200s that were not complete JSON lines, or bodies cut short
	latencies []time.Duration

	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// startReaders runs workers closed-loop over urls (round robin) when rate
// is 0, else issues rate requests per second open-loop (spread over the
// workers, never more than that even when answers are slow).
func startReaders(urls []string, workers, rate int) *readers {
	r := &readers{
		urls:   urls,
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers, DisableCompression: true}},
		bodies: map[string]map[string]int{},
		status: map[int]int{},
		stop:   make(chan struct{}),
	}
	var ticks chan struct{}
	if rate > 0 {
		// Up to a second of backlog: a generator starved of CPU for a
		// moment catches up instead of counting misses.
		ticks = make(chan struct{}, rate)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(ticks)
			start := time.Now()
			for n := 0; ; n++ {
				next := start.Add(time.Duration(n) * time.Second / time.Duration(rate))
				select {
				case <-r.stop:
					return
				case <-time.After(time.Until(next)):
				}
				select {
				case ticks <- struct{}{}:
				default:
					// A second behind: the generator, not the server,
					// fell behind; say so in the report.
					r.mu.Lock()
					r.unsent++
					r.mu.Unlock()
				}
			}
		}()
	}
	for w := range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for i := w; ; i++ {
				if ticks != nil {
					if _, ok := <-ticks; !ok {
						return
					}
				} else {
					select {
					case <-r.stop:
						return
					default:
					}
				}
				r.one(urls[i%len(urls)])
			}
		}()
	}
	return r
}

func (r *readers) one(url string) {
	start := time.Now()
	resp, err := r.client.Get(url)
	if err != nil {
		r.mu.Lock()
		r.connErrs++
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // down: do not spin
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, d)
	switch {
	case err != nil:
		r.broken = append(r.broken, fmt.Sprintf("%s: body cut after %d bytes: %v", url, len(body), err))
	case resp.StatusCode != http.StatusOK:
		r.status[resp.StatusCode]++
		defer time.Sleep(20 * time.Millisecond) // failing fast: do not spin
	default:
		if err := jsonLines(body); err != nil {
			r.broken = append(r.broken, fmt.Sprintf("%s: %d bytes: %v", url, len(body), err))
			return
		}
		r.ok++
		m := r.bodies[url]
		if m == nil {
			m = map[string]int{}
			r.bodies[url] = m
		}
		m[sum(body)]++
	}
}

// finish stops the readers and waits for them; it may be called again.
func (r *readers) finish() {
	r.once.Do(func() { close(r.stop) })
	r.wg.Wait()
}

// saw reports whether a reader got the body with hash h (from sum) from
// url.
func (r *readers) saw(url, h string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[url][h] > 0
}

// unexpected lists the answers to url whose body is none of the allowed
// ones (hashes from sum).
func (r *readers) unexpected(url string, allowed ...string) []string {
	var out []string
	for h, n := range r.bodies[url] {
		if !slices.Contains(allowed, h) {
			out = append(out, fmt.Sprintf("%s %d×", h, n))
		}
	}
	return out
}

// percentile of the answered requests' latencies (0 < p <= 1).
func (r *readers) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(float64(len(l))*p))]
}

func (r *readers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d complete answers, %d broken, %d without connection", r.ok, len(r.broken), r.connErrs)
	for code, n := range r.status {
		fmt.Fprintf(&b, ", %d× HTTP %d", n, code)
	}
	if r.unsent > 0 {
		fmt.Fprintf(&b, ", %d not sent (the load generator over a second behind schedule)", r.unsent)
	}
	if len(r.latencies) > 0 {
		fmt.Fprintf(&b, "; latency p50 %v p99 %v max %v", r.percentile(0.5).Round(10*time.Microsecond),
			r.percentile(0.99).Round(10*time.Microsecond), r.percentile(1).Round(10*time.Microsecond))
	}
	return b.String()
}
