package graphql_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Budgets of one fuzz input: whatever the query, the server answers or
// refuses it within these, measured on the process (CPU from rusage,
// allocation from the runtime), never by the clock.
const (
	fuzzCPU   = 2 * time.Second
	fuzzAlloc = 256 << 20
)

// FuzzQuery posts any query to the GraphQL endpoint over a real catalog.
// The cost oracle: every input is answered (200, 400) or refused, never
// a crash, within the CPU and allocation budgets; an answer that ran is
// no larger than the cost model's worst case. Seeds: the test queries,
// testdata/fuzz/FuzzQuery (the attack shapes) and attacks built here.
func FuzzQuery(f *testing.F) {
	for _, q := range queries(f) {
		f.Add(q)
	}
	f.Add("{ olmpackages(limit: " + strings.Repeat("[", 1000) + "1" + strings.Repeat("]", 1000) + ") { name } }")
	f.Add(`{ olmpackages(name: ` + strings.Repeat("[", 2000) + `"a"` + strings.Repeat("]", 2000) + `) { name } }`)
	store := newStore(f)
	syncDir(f, store, "cat", fbcDir(f, "community-v4.21-3pkgs"))
	r, g := router(store)
	f.Fuzz(func(t *testing.T, q string) {
		body, _ := json.Marshal(map[string]string{"query": q})
		req := httptest.NewRequest(http.MethodPost, "/catalogs/cat/api/v1/graphql", strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		cpu0, alloc0 := usage()
		r.ServeHTTP(w, req)
		cpu1, alloc1 := usage()
		if cpu := cpu1 - cpu0; cpu > fuzzCPU*raceSlowdown {
			t.Errorf("%v of CPU, budget %v", cpu, fuzzCPU*raceSlowdown)
		}
		if a := alloc1 - alloc0; a > fuzzAlloc {
			t.Errorf("%d MiB allocated, budget %d MiB", a>>20, fuzzAlloc>>20)
		}
		switch w.Code {
		case http.StatusOK:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("answer is not JSON: %.300s", w.Body.Bytes())
			}
			if est, err := g.Estimate(context.Background(), "cat", q); err == nil && int64(w.Body.Len()) > est {
				t.Errorf("answer of %d bytes, worst case %d", w.Body.Len(), est)
			}
		case http.StatusBadRequest, http.StatusServiceUnavailable:
		default:
			t.Fatalf("status %d: %.300s", w.Code, w.Body.Bytes())
		}
	})
}

// usage is the process's CPU time and bytes allocated so far.
func usage() (time.Duration, uint64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), m.TotalAlloc
}
