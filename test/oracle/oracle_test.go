package oracle

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/buildindex"
	"github.com/catalogsync/catalogsync/sync/fbc"
)

var (
	flagCount = flag.Int("oracle.count", 0, "generated cases (default 400, or $CATALOGSYNC_ORACLE_COUNT)")
	flagSeed  = flag.Uint64("oracle.seed", 0, "first seed (default: from the time; printed)")
	flagJobs  = flag.Int("oracle.jobs", 0, "cases run at once (default: GOMAXPROCS)")
)

// ciCount is what CI spends on the oracle, about 42 ms of CPU a case
// (docs/oracle.md): each run starts from a new seed, so the runs add up,
// and every rule firing at least once in 130 cases of the long runs fires
// in a CI run but for one in twenty. shortCount keeps `go test -short`,
// the unit tests' run, to seconds while still running the oracle.
const (
	ciCount    = 400
	shortCount = 50
)

func count() int {
	if *flagCount > 0 {
		return *flagCount
	}
	if n, err := strconv.Atoi(os.Getenv("CATALOGSYNC_ORACLE_COUNT")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return shortCount
	}
	return ciCount
}

// ours reads dir as the pipeline does: buildindex.Scan for the file list
// (.indexignore, links, walk order), fbc.Parse per file, one fbc.Validator.
func ours(ctx context.Context, dir string) (verdict, error) {
	files, _, err := buildindex.Scan(ctx, dir)
	if err != nil {
		if errors.Is(err, fbc.ErrInvalid) {
			return verdict{rules: []string{fbc.RuleParse}}, nil
		}
		return verdict{}, err
	}
	var v verdict
	var buf []byte
	val := fbc.NewValidator()
	parseErr := false
	for _, f := range files {
		var objs []fbc.Object
		r, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Content)))
		if err != nil {
			return v, err
		}
		err = fbc.Parse(bufio.NewReader(r), func(o fbc.Object) error {
			objs = append(objs, o)
			return nil
		})
		r.Close()
		if err != nil && !errors.Is(err, fbc.ErrInvalid) {
			return v, err
		}
		// opm judges the objects before a syntax error as it reads them.
		parseErr = parseErr || err != nil
		for _, o := range objs {
			buf = append(buf, o.Blob...)
			val.Add(f.Path, o)
		}
	}
	v.stored = !parseErr
	if v.stored {
		v.bytes = buf
	}
	err = val.Validate()
	v.valid = err == nil && !parseErr
	if parseErr {
		v.rules = append(v.rules, fbc.RuleParse)
	}
	v.rules = append(v.rules, rulesOf(err)...)
	if err != nil {
		v.msg = err.Error()
	}
	sort.Strings(v.rules)
	v.rules = slices.Compact(v.rules)
	return v, nil
}

func rulesOf(err error) []string {
	var out []string
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		for _, e := range j.Unwrap() {
			out = append(out, rulesOf(e)...)
		}
		return out
	}
	var ve *fbc.ValidationError
	if errors.As(err, &ve) {
		out = append(out, ve.Rule)
	}
	return out
}

// compare returns "" when both sides agree, else "KIND: details".
func compare(peer, us verdict) string {
	switch {
	case peer.stored != us.stored:
		return fmt.Sprintf("store: catalogd stored=%v, catalogsync stored=%v\n  opm: %s\n  ours: %s", peer.stored, us.stored, peer.msg, us.msg)
	case peer.stored:
		if d := firstDiff(peer.bytes, us.bytes); d != "" {
			return "bytes: " + d
		}
	}
	if peer.parseSplit() {
		// opm v1.50.0 reads some streams catalogd's newer decoder
		// accepts (a YAML document after JSON ones): catalogd is the
		// reference for parsing, so opm's verdict says nothing here.
		return ""
	}
	switch {
	case peer.valid != us.valid:
		return fmt.Sprintf("verdict: opm valid=%v, catalogsync valid=%v\n  opm: %s %v\n  ours: %v %s", peer.valid, us.valid, peer.msg, peer.rules, us.rules, us.msg)
	case peer.valid:
		return ""
	}
	// opm stops at the first problem of loading or conversion, but
	// model validation reports them all: then the sets must be equal.
	if peer.stage == "model" && !slices.Equal(peer.rules, us.rules) ||
		peer.stage != "model" && !slices.Contains(us.rules, peer.rules[0]) {
		return fmt.Sprintf("rules: opm %s %v, catalogsync %v\n  opm: %s\n  ours: %s", peer.stage, peer.rules, us.rules, peer.msg, us.msg)
	}
	return ""
}

type runner struct {
	peers string
	ctx   context.Context
}

// check writes c under work and compares both sides.
func (r *runner) check(c catalog, work string) (string, error) {
	d, _, err := r.checkV(c, work)
	return d, err
}

func (r *runner) checkV(c catalog, work string) (string, verdict, error) {
	os.RemoveAll(work)
	dir := filepath.Join(work, "fbc")
	if err := writeCatalog(c, dir); err != nil {
		return "", verdict{}, err
	}
	peer, err := runPeers(r.ctx, r.peers, dir, work)
	if err != nil {
		return "", peer, err
	}
	us, err := ours(r.ctx, dir)
	if err != nil {
		return "", peer, err
	}
	return compare(peer, us), peer, nil
}

// tally counts what opm and catalogd said, to show what a run covered.
type tally struct {
	mu                          sync.Mutex
	valid, stored, split, total int
	rules                       map[string]int
	parseMsgs                   map[string]int // opm's parse errors, shortened
}

func (t *tally) add(v verdict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	switch {
	case v.parseSplit():
		t.split++
	case v.valid:
		t.valid++
	}
	if v.stored {
		t.stored++
	}
	if t.rules == nil {
		t.rules = map[string]int{}
	}
	for _, r := range v.rules {
		t.rules[r]++
	}
	if !v.valid && v.rules[0] == fbc.RuleParse {
		if t.parseMsgs == nil {
			t.parseMsgs = map[string]int{}
		}
		m := regexp.MustCompile(`line \d+|offset \d+|"[^"]*"`).ReplaceAllString(v.msg, "_")
		t.parseMsgs[m[:min(len(m), 90)]]++
	}
}

func (t *tally) String() string {
	keys := make([]string, 0, len(t.rules))
	for k := range t.rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "opm valid %d of %d, catalogd stored %d, parse split %d; rules fired:", t.valid, t.total, t.stored, t.split)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, t.rules[k])
	}
	if testing.Verbose() {
		for m, n := range t.parseMsgs {
			fmt.Fprintf(&b, "\n  %4d parse: %s", n, m)
		}
	}
	return b.String()
}

func writeCatalog(c catalog, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range c.files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func TestOracle(t *testing.T) {
	peers := peersDir(t)
	n := count()
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	jobs := *flagJobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	t.Logf("oracle: %d cases from seed %d, %d at once (-oracle.seed=%d reproduces)", n, seed, jobs, seed)
	r := &runner{peers: peers, ctx: t.Context()}
	var (
		next, done, diffs atomic.Int64
		mu                sync.Mutex
		kinds             = map[string]int{}
		wg                sync.WaitGroup
		start             = time.Now()
		seen              tally
	)
	for w := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := filepath.Join(t.TempDir(), strconv.Itoa(w))
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || t.Context().Err() != nil || diffs.Load() >= 5 {
					return
				}
				c := newGen(seed + uint64(i)).catalog()
				d, pv, err := r.checkV(c, work)
				seen.add(pv)
				if err != nil {
					t.Errorf("case %d (seed %d): %v", i, seed+uint64(i), err)
					return
				}
				if n := done.Add(1); n%1000 == 0 {
					t.Logf("oracle: %d cases, %d differences, %v", n, diffs.Load(), time.Since(start).Round(time.Second))
				}
				if d == "" {
					continue
				}
				diffs.Add(1)
				kind, _, _ := strings.Cut(d, ":")
				mu.Lock()
				kinds[kind]++
				mu.Unlock()
				small, sd := shrink(r, c, kind, d, work)
				path, err := writeRepro(small, sd, seed+uint64(i))
				if err != nil {
					t.Error(err)
				}
				t.Errorf("case %d (seed %d) differs; reproducer %s\n%s", i, seed+uint64(i), path, sd)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	t.Logf("oracle: %d cases in %v (%.1f/s), %d differences %v", done.Load(), el.Round(time.Millisecond), float64(done.Load())/el.Seconds(), diffs.Load(), kinds)
	t.Logf("oracle: %s", &seen)
}

// writeRepro stores a failing case as testdata/repro-<hash>/: the FBC
// directory and what differed.
func writeRepro(c catalog, diff string, seed uint64) (string, error) {
	h := sha256.New()
	for _, f := range c.files {
		fmt.Fprintf(h, "%s\x00%s\x00", f.path, f.bytes())
	}
	dir := filepath.Join("testdata", "repro-"+hex.EncodeToString(h.Sum(nil))[:12])
	os.RemoveAll(dir)
	if err := writeCatalog(c, filepath.Join(dir, "fbc")); err != nil {
		return "", err
	}
	note := fmt.Sprintf("seed: %d\n%s\n", seed, diff)
	return dir, os.WriteFile(filepath.Join(dir, "DIFF.txt"), []byte(note), 0o644)
}

// TestRepros runs every committed reproducer against the peers: each was
// a difference once and must agree now.
func TestRepros(t *testing.T) {
	peers := peersDir(t)
	dirs, _ := filepath.Glob(filepath.Join("testdata", "repro-*"))
	if len(dirs) == 0 {
		t.Skip("no reproducers")
	}
	r := &runner{peers: peers, ctx: t.Context()}
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			work := t.TempDir()
			peer, err := runPeers(r.ctx, peers, filepath.Join(d, "fbc"), work)
			if err != nil {
				t.Fatal(err)
			}
			us, err := ours(r.ctx, filepath.Join(d, "fbc"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := compare(peer, us); diff != "" {
				t.Error(diff)
			}
		})
	}
}
