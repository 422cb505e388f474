package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Info is what bench/run.sh records about the run, one "key: value" a
// line; "step" repeats, once per command run.
type Info struct {
	Command   string
	Date      string
	Go        string
	LoadStart string // /proc/loadavg's first three fields
	LoadEnd   string
	QuietWait string // how long the run waited for a quiet machine (-wait-quiet)
	Elapsed   string // seconds
	Quick     bool
	Steps     []string
}

// ParseInfo reads run.sh's info file.
func ParseInfo(r io.Reader) (Info, error) {
	var in Info
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "command":
			in.Command = v
		case "date":
			in.Date = v
		case "go":
			in.Go = v
		case "load-start":
			in.LoadStart = v
		case "load-end":
			in.LoadEnd = v
		case "quiet-wait":
			in.QuietWait = v
		case "elapsed":
			in.Elapsed = v
		case "quick":
			in.Quick = v == "1"
		case "step":
			in.Steps = append(in.Steps, v)
		}
	}
	return in, sc.Err()
}

// Report is the template's data: every table is rendered from Run.
type Report struct {
	Run     *Run
	Machine Machine
	Info    Info

	told map[string]bool // reasons for missing figures already given in full
}

// reason shortens why a figure is missing once the document has given
// that reason in full: "skipped (as above)".
func (r *Report) reason(why string) string { return r.shortReason(why, " (as above)") }

func (r *Report) shortReason(why, suffix string) string {
	if r.told == nil {
		r.told = map[string]bool{}
	}
	kind, _, ok := strings.Cut(why, ": ")
	if !ok {
		return why
	}
	if r.told[why] {
		return kind + suffix
	}
	r.told[why] = true
	return why
}

const (
	syncBench   = "BenchmarkSync/"
	incrBench   = "BenchmarkSyncIncremental/"
	coldBench   = "BenchmarkColdStart/"
	wrkBench    = "BenchmarkMetasWrk/"
	stormBench  = "BenchmarkWebhookStorm"
	statusBench = "BenchmarkStatusLatency/"
)

// catalogs in the order the tables list them, with how they are made.
var catalogs = []struct{ name, what string }{
	{"tiny", "testdata/fbc/tiny"},
	{"community-v4.21", "shared community-v4.21"},
	{"generated-x4", "4 renamed copies"},
	{"generated-x16", "16 renamed copies"},
}

var stores = []struct{ key, name string }{{"fs", "fs"}, {"s3", "MinIO"}}

// table renders a markdown table.
func table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		for len(r) < len(header) {
			r = append(r, "")
		}
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// RunTable describes the machine and the run.
func (r *Report) RunTable() string {
	in := r.Info
	rows := [][]string{
		{"date", orDash(in.Date)},
		{"command", "`" + orDash(in.Command) + "`"},
		{"machine", r.Machine.String()},
		{"kernel", orDash(r.Machine.Kernel)},
		{"Go", orDash(in.Go)},
		{"waited for a quiet machine", orDash(in.QuietWait)},
		{"load average (1, 5, 15 min) at start", orDash(in.LoadStart)},
		{"load average (1, 5, 15 min) at end", orDash(in.LoadEnd)},
		{"took", fmtElapsed(in.Elapsed)},
	}
	if in.Quick {
		rows = append(rows, []string{"mode", "quick (BENCH_QUICK=1: one iteration each, short wrk runs): for checking the harness, not for figures"})
	}
	return table([]string{"", ""}, rows)
}

// Steps are the commands the run ran, in order, as a shell block.
func (r *Report) Steps() string {
	if len(r.Info.Steps) == 0 {
		return "(not recorded)"
	}
	return "```sh\n" + strings.Join(r.Info.Steps, "\n") + "\n```"
}

// LoadNote warns when the machine was busy when the run started. The load
// at the end is shown but not judged: it is mostly the benchmarks' own.
func (r *Report) LoadNote() string {
	n := max(r.Machine.Threads, 1)
	busy := false
	if f := strings.Fields(r.Info.LoadStart); len(f) > 0 {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > busyLoad(n) {
			busy = true
		}
	}
	var notes []string
	if busy {
		notes = append(notes, fmt.Sprintf("**The machine was busy** (1-minute load above half its %d processors when the run started): other work shared the cores, so these figures are noisy. Re-run `bench/run.sh` on a quiet machine for figures to quote.", n))
	}
	if len(r.Run.PkgFail) > 0 {
		notes = append(notes, "**Failed:** "+strings.Join(r.Run.PkgFail, ", ")+" (see the benchmark output); their missing figures say so below.")
	}
	return strings.Join(notes, "\n\n")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func fmtElapsed(sec string) string {
	v, err := strconv.ParseFloat(sec, 64)
	if err != nil {
		return orDash(sec)
	}
	return fmt.Sprintf("%d min %02d s", int(v)/60, int(v)%60)
}

// size is a catalog's uncompressed size as any benchmark reported it.
func (r *Report) size(catalog string) string {
	for _, p := range []string{syncBench, coldBench} {
		for _, st := range stores {
			if v, ok := r.Run.Value(p+catalog+"/"+st.key, "catalog-MB"); ok {
				return fmtUnit("catalog-MB", v)
			}
		}
	}
	if v, ok := r.Run.Value(peerIngestBench+catalog+"/catalogsync-index", "catalog-MB"); ok {
		return fmtUnit("catalog-MB", v)
	}
	return "–"
}

// cell is a formatted metric, or why the benchmark has none.
func (r *Report) cell(name, unit string) string {
	res, why := r.Run.Status(name)
	if res == nil {
		return r.reason(why)
	}
	v, ok := res.Metrics[unit]
	if !ok {
		return "–"
	}
	return fmtUnit(unit, v)
}

// missing tells why a benchmark has no result ("" when it has one).
func (r *Report) missing(name string) string {
	if res, why := r.Run.Status(name); res == nil {
		return why
	}
	return ""
}

// SyncTable: wall time and throughput of each sync against its floors.
func (r *Report) SyncTable() string {
	var rows [][]string
	for _, c := range catalogs {
		for _, st := range stores {
			name := syncBench + c.name + "/" + st.key
			if why := r.missing(name); why != "" {
				rows = append(rows, []string{c.name, r.size(c.name), st.name, r.reason(why)})
				continue
			}
			rows = append(rows, []string{c.name, r.size(c.name), st.name,
				r.cell(name, "ns/op"), r.cell(name, "MB/s"), r.cell(name, "gunzip-floor-s"), r.cell(name, "x-floor"),
				r.cell(name, "store-floor-s"), r.cell(name, "x-store-floor"),
				r.cell(name, "user-s") + " / " + r.cell(name, "system-s")})
		}
	}
	return table([]string{"catalog", "size", "store", "wall", "MB/s", "gunzip floor (baseline)", "× floor", "store floor", "× store floor", "CPU user / system"}, rows)
}

// RSSTable: the sync process's peak RSS by catalog size, against tiny's:
// VmHWM and the sampled anonymous peak. Each figure is the highest of the
// benchmark's iterations.
func (r *Report) RSSTable() string {
	return r.bySize(syncBench, metric{"VmHWM (max)", rssUnit}, metric{"anon peak (max)", anonUnit})
}

// ColdStartTable: process start to the first metas answer, by size,
// against tiny's: `serve`, then catalogsync-reader, on each store.
func (r *Report) ColdStartTable() string {
	return r.bySize(coldBench, metric{"cold start", "cold-start-ms"}) + "\n" +
		r.bySizeOn(readerStores, coldBench, metric{"cold start", "cold-start-ms"})
}

// readerStores are BenchmarkColdStart's catalogsync-reader runs.
var readerStores = []struct{ key, name string }{{"fs-reader", "reader fs"}, {"s3-reader", "reader MinIO"}}

// metric is a column of a table: its heading and the unit it shows.
type metric struct{ what, unit string }

// bySize has a row per catalog and, per store, each metric beside its
// ratio to tiny's.
func (r *Report) bySize(prefix string, ms ...metric) string {
	return r.bySizeOn(stores, prefix, ms...)
}

// bySizeOn is bySize over the given stores.
func (r *Report) bySizeOn(stores []struct{ key, name string }, prefix string, ms ...metric) string {
	header := []string{"catalog", "size"}
	for _, st := range stores {
		for _, m := range ms {
			header = append(header, st.name+" "+m.what, "× tiny")
		}
	}
	var rows [][]string
	for _, c := range catalogs {
		row := []string{c.name, r.size(c.name)}
		for _, st := range stores {
			name := prefix + c.name + "/" + st.key
			for _, m := range ms {
				row = append(row, r.cell(name, m.unit), r.ratio(name, prefix+"tiny/"+st.key, m.unit))
			}
		}
		rows = append(rows, row)
	}
	return table(header, rows)
}

// ratio is a/b of one metric as "1.23×", or "–".
func (r *Report) ratio(a, b, unit string) string {
	va, ok1 := r.Run.Value(a, unit)
	vb, ok2 := r.Run.Value(b, unit)
	if !ok1 || !ok2 || vb == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", va/vb)
}

// Ratio is a/b of one metric with both values: "1.30× (2.33 s / 1.79 s)".
func (r *Report) Ratio(a, b, unit string) string {
	va, ok1 := r.Run.Value(a, unit)
	vb, ok2 := r.Run.Value(b, unit)
	if !ok1 || !ok2 || vb == 0 {
		return "n/a in this run (" + r.shortReason(firstNonEmpty(r.missing(a), r.missing(b), "no "+unit+" reported"), "") + ")"
	}
	return fmt.Sprintf("%.2f× (%s / %s)", va/vb, fmtUnit(unit, va), fmtUnit(unit, vb))
}

// Change is a's difference from b in percent: "−11% (23,356 vs 26,190)".
func (r *Report) Change(a, b, unit string) string {
	va, ok1 := r.Run.Value(a, unit)
	vb, ok2 := r.Run.Value(b, unit)
	if !ok1 || !ok2 || vb == 0 {
		return "n/a in this run (" + r.shortReason(firstNonEmpty(r.missing(a), r.missing(b), "no "+unit+" reported"), "") + ")"
	}
	pct := (va/vb - 1) * 100
	sign := "+"
	if pct < 0 {
		sign = "−"
	}
	return fmt.Sprintf("%s%.0f%% (%s vs %s)", sign, math.Abs(pct), fmtUnit(unit, va), fmtUnit(unit, vb))
}

// Val is one formatted metric, or why it is missing.
func (r *Report) Val(name, unit string) string { return r.cell(name, unit) }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Phases lists the phase durations a sync benchmark reported.
func (r *Report) Phases(name string) string { return r.phases(syncBench + name) }

// IncrementalPhases lists those of an incremental sync benchmark.
func (r *Report) IncrementalPhases(name string) string { return r.phases(incrBench + name) }

func (r *Report) phases(name string) string {
	res, why := r.Run.Status(name)
	if res == nil {
		return r.reason(why)
	}
	var parts []string
	for _, ph := range []string{"resolving", "pulling", "unpacking", "validating", "indexing", "publishing"} {
		if v, ok := res.Metrics[ph+"-ms"]; ok {
			parts = append(parts, ph+" "+fmtMS(v))
		}
	}
	if len(parts) == 0 {
		return "not reported"
	}
	return strings.Join(parts, ", ")
}

// syncTargets are the targets of a catalog's syncs (0: none): the
// incremental sync's in × the gunzip floor of its layer, and the full
// sync's in × its store floor, which replaced × the gunzip floor for it.
var syncTargets = map[string]struct{ incremental, fullStoreFloor float64 }{
	"community-v4.21": {2, 0},
	"generated-x16":   {1.3, 1.3},
}

// rssTarget is the peak RSS every sync must stay under, in MiB; it is
// checked against both figures a sync reports.
const rssTarget = 64

// inProcUnit is a sync's own time against the floor: from resolving to
// publishing, without the process's start, as a running replica spends
// it when a webhook arrives.
const inProcUnit = "x-floor-in-process"

// The sync's two peaks: VmHWM, which counts the executable's mapped
// pages, and the sampled anonymous resident memory.
const (
	rssUnit  = "peak-RSS-MiB"
	anonUnit = "peak-anon-MiB"
)

// IncrementalTable: the sync of a catalog's second version, one package
// changed, into a store holding the first, beside the full sync of the
// same catalog (BenchmarkSync) from the same run.
func (r *Report) IncrementalTable() string {
	var rows [][]string
	for _, c := range catalogs {
		if c.name == "tiny" {
			continue
		}
		for _, st := range stores {
			name, full := incrBench+c.name+"/"+st.key, syncBench+c.name+"/"+st.key
			if why := r.missing(name); why != "" {
				rows = append(rows, []string{c.name, r.size(c.name), st.name, r.reason(why)})
				continue
			}
			rows = append(rows, []string{c.name, r.size(c.name), st.name,
				r.cell(full, "ns/op"), r.cell(full, "x-floor"),
				r.cell(name, "ns/op"), r.cell(name, "x-floor"),
				r.cell(full, inProcUnit) + " / " + r.cell(name, inProcUnit), r.reused(name),
				r.cell(name, rssUnit), r.cell(name, anonUnit), r.verdict(c.name, name, full)})
		}
	}
	return table([]string{"catalog", "size", "store", "full sync", "× floor", "incremental sync", "× floor (v2's layer)",
		"× floor in a running replica (full / incremental)", "files reused", "VmHWM (max)", "anon peak (max)", "targets"}, rows)
}

// reused is "M of N" files, or "0" when the sync reported no files line.
func (r *Report) reused(name string) string {
	n, _ := r.Run.Value(name, "files")
	m, _ := r.Run.Value(name, "reused-files")
	if n == 0 {
		return fmt.Sprintf("%.0f (no count reported)", m)
	}
	return fmt.Sprintf("%.0f of %.0f", m, n)
}

// verdict says whether the row meets its targets: the incremental sync's
// × floor, as a process and in a running replica, the full sync's ×
// store floor, and peak RSS, both as VmHWM and as the anonymous peak.
func (r *Report) verdict(catalog, incr, full string) string {
	var parts []string
	check := func(what, name, unit string, limit float64, format string) {
		v, ok := r.Run.Value(name, unit)
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf(what+" ≤ "+format+": n/a", limit))
		case v <= limit:
			parts = append(parts, fmt.Sprintf(what+" ≤ "+format+": met", limit))
		default:
			parts = append(parts, fmt.Sprintf(what+" ≤ "+format+": **not met**", limit))
		}
	}
	t := syncTargets[catalog]
	if t.incremental > 0 {
		check("incremental", incr, "x-floor", t.incremental, "%g×")
		check("incremental in a running replica", incr, inProcUnit, t.incremental, "%g×")
	}
	if t.fullStoreFloor > 0 {
		check("full", full, "x-store-floor", t.fullStoreFloor, "%g× store floor")
	}
	check("RSS", incr, rssUnit, rssTarget, "%g MiB (VmHWM)")
	check("RSS", incr, anonUnit, rssTarget, "%g MiB (anonymous)")
	return strings.Join(parts, "; ")
}

// WrkTable: req/s and p99 of each metas query, against /healthz.
func (r *Report) WrkTable() string {
	var rows [][]string
	for _, st := range stores {
		name := wrkBench + "healthz/" + st.key
		if why := r.missing(name); why != "" {
			rows = append(rows, []string{"`/healthz` (baseline)", "–", st.name, r.reason(why)})
			continue
		}
		rows = append(rows, []string{"`/healthz` (baseline)", "–", st.name, r.cell(name, "req/s"), r.cell(name, "p99-ms"), "", "", "1.00×"})
	}
	queries := []struct{ catalog, pkg string }{{"community-v4.21", "kepler-operator"}, {"generated-x16", "kepler-operator-copy8"}}
	for _, kind := range []string{"package", "schema"} {
		for _, q := range queries {
			for _, st := range stores {
				query := "`?package=" + q.pkg + "`"
				if kind == "schema" {
					query = "`?schema=olm.package`"
				}
				base := wrkBench + q.catalog + "/" + st.key + "/" + kind + "/"
				if why := r.missing(base + "identity"); why != "" && r.missing(base+"gzip") != "" {
					rows = append(rows, []string{query, q.catalog, st.name, r.reason(why)})
					continue
				}
				rows = append(rows, []string{query, q.catalog, st.name,
					r.cell(base+"identity", "req/s"), r.cell(base+"identity", "p99-ms"),
					r.cell(base+"gzip", "req/s"), r.cell(base+"gzip", "p99-ms"),
					r.ratio(base+"identity", wrkBench+"healthz/"+st.key, "req/s")})
			}
		}
	}
	return table([]string{"query", "catalog", "store", "identity req/s", "p99", "gzip req/s", "p99", "identity × /healthz"}, rows)
}

// StormTable: coalescing of a webhook storm, against a lone webhook.
func (r *Report) StormTable() string {
	n := stormBench
	if why := r.missing(n); why != "" {
		return table([]string{"webhook storm"}, [][]string{{r.reason(why)}})
	}
	return table([]string{"webhooks", "sent over", "syncs", "ack p50", "ack p99", "ack max", "lone webhook ack (baseline)", "p50 × lone", "p99 × lone"},
		[][]string{{r.cell(n, "webhooks"), r.cell(n, "storm-s"), r.cell(n, "max-syncs"), r.cell(n, "ack-p50-ms"), r.cell(n, "ack-p99-ms"),
			r.cell(n, "ack-max-ms"), r.cell(n, "single-ack-ms"), r.cell(n, "p50-x-single"), r.cell(n, "p99-x-single")}})
}

// StatusTable: phase→watch latency per catalog, against the apiserver's
// own write→watch latency.
func (r *Report) StatusTable() string {
	floor := statusBench + "write-watch-floor"
	var rows [][]string
	if why := r.missing(floor); why != "" {
		rows = append(rows, []string{"apiserver write→watch (baseline)", r.reason(why)})
	} else {
		rows = append(rows, []string{"apiserver write→watch (baseline)", "–", "–", "–", "–",
			r.cell(floor, "lat-mean-ms"), r.cell(floor, "lat-max-ms"), "1.00×"})
	}
	for _, c := range []string{"tiny", "community-v4.21-3pkgs", "community-v4.21"} {
		name := statusBench + c
		if why := r.missing(name); why != "" {
			rows = append(rows, []string{c, r.reason(why)})
			continue
		}
		shown := "–"
		if s, ok1 := r.Run.Value(name, "shown/sync"); ok1 {
			if p, ok2 := r.Run.Value(name, "phases/sync"); ok2 {
				shown = fmt.Sprintf("%.1f / %.1f", s, p)
			}
		}
		rows = append(rows, []string{c, r.cell(name, "sync-ms"), r.cell(name, "applies/sync"), r.cell(name, "versions/sync"), shown,
			r.cell(name, "lat-mean-ms"), r.cell(name, "lat-max-ms"), r.ratio(name, floor, "lat-mean-ms")})
	}
	return table([]string{"catalog", "sync", "applies/sync", "object versions/sync", "phases shown / run", "phase→watch mean", "max", "mean × floor"}, rows)
}

// Micro renders every benchmark of one package (given by its path in the
// module, e.g. "sync/fbc").
func (r *Report) Micro(pkg string) string {
	var names []string
	for _, n := range r.Run.Order {
		if p := r.Run.Pkgs[n]; p == pkg || strings.HasSuffix(p, "/"+pkg) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		why := "not run"
		for _, p := range r.Run.PkgFail {
			if p == pkg || strings.HasSuffix(p, "/"+pkg) {
				why = "failed (see the benchmark output)"
			}
		}
		return table([]string{"benchmark", "result"}, [][]string{{"`./" + pkg + "`", why}})
	}
	std := map[string]bool{"ns/op": true, "MB/s": true, "B/op": true, "allocs/op": true}
	var rows [][]string
	for i, n := range names {
		res := r.Run.Results[n]
		if res == nil {
			// A parent that failed because a child did says nothing new.
			if i+1 < len(names) && strings.HasPrefix(names[i+1], n+"/") || i > 0 && strings.HasPrefix(names[i-1], n+"/") {
				continue
			}
			_, why := r.Run.Status(n)
			rows = append(rows, []string{"`" + n + "`", r.reason(why)})
			continue
		}
		var extra []string
		for _, u := range res.Units {
			if !std[u] {
				extra = append(extra, fmtUnit(u, res.Metrics[u])+" "+u)
			}
		}
		sort.Strings(extra)
		rows = append(rows, []string{"`" + n + "`", fmtUnit("ns/op", res.Metrics["ns/op"]),
			optional(res, "MB/s"), optional(res, "B/op"), optional(res, "allocs/op"), strings.Join(extra, ", ")})
	}
	return table([]string{"benchmark", "time/op", "MB/s", "B/op", "allocs/op", "other"}, rows)
}

func optional(res *Result, unit string) string {
	if v, ok := res.Metrics[unit]; ok {
		return fmtUnit(unit, v)
	}
	return ""
}

// fmtUnit formats a metric by its unit.
func fmtUnit(unit string, v float64) string {
	switch {
	case unit == "ns/op":
		return fmtSeconds(v / 1e9)
	case unit == "catalog-MB":
		if v < 0.1 {
			return fmt.Sprintf("%.1f KB", v*1000)
		}
		return fmt.Sprintf("%.1f MB", v)
	case unit == "init-bytes":
		return fmt.Sprintf("%.2f MB", v/1e6)
	case unit == "req/s" || unit == "B/op" || unit == "allocs/op" || unit == "webhooks":
		return commas(v)
	case unit == "MB/s":
		if v < 10 {
			return fmt.Sprintf("%.2f", v)
		}
		return commas(v)
	case strings.HasSuffix(unit, "-MB"):
		return fmt.Sprintf("%.1f MB", v)
	case strings.HasSuffix(unit, "-MiB"):
		return fmt.Sprintf("%.0f MiB", v)
	case strings.HasSuffix(unit, "-ms"):
		return fmtMS(v)
	case strings.HasSuffix(unit, "-s"):
		return fmtSeconds(v)
	case strings.HasPrefix(unit, "x-") || strings.Contains(unit, "-x-"):
		return fmt.Sprintf("%.2f×", v)
	case unit == "max-syncs":
		return fmt.Sprintf("%.0f", v)
	case strings.HasSuffix(unit, "/sync"):
		return fmt.Sprintf("%.1f", v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return commas(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func fmtMS(ms float64) string { return fmtSeconds(ms / 1000) }

// fmtSeconds shows a duration with three significant digits or so; each
// bound is where the next coarser format would round to 1000.
func fmtSeconds(s float64) string {
	switch {
	case s >= 0.9995:
		return fmt.Sprintf("%.2f s", s)
	case s >= 0.09995:
		return fmt.Sprintf("%.0f ms", s*1e3)
	case s >= 0.009995:
		return fmt.Sprintf("%.1f ms", s*1e3)
	case s >= 0.0009995:
		return fmt.Sprintf("%.2f ms", s*1e3)
	case s >= 99.95e-6:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s >= 9.995e-6:
		return fmt.Sprintf("%.1f µs", s*1e6)
	default:
		return fmt.Sprintf("%.2f µs", s*1e6)
	}
}

// commas formats v rounded to an integer, with thousands separators.
func commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
