#!/usr/bin/env bash
# Runs every benchmark against the real servers and regenerates
# docs/benchmarks.md and docs/benchmarks-detail.md from their output
# (bench/report renders them: the prose is in bench/report's templates,
# the tables come from this run). Each
# figure is measured in the same run as its baseline.
#
#   bench/run.sh                  # everything (8-9 minutes on 2 busy cores, ~6 more
#                                 # with the peers present, ~2 more for the
#                                 # incremental syncs of the sync step)
#   BENCH_QUICK=1 bench/run.sh    # one iteration each, 2 s wrk runs: checks
#                                 # the harness in a few minutes
#   bench/run.sh sync load        # only some steps: sync, serve, load, peers, micro, weight
#
# A quick or partial run writes its documents to $TMPDIR, not to docs/
# (BENCH_OUT=FILE chooses; the detail document goes beside it as
# FILE's name with -detail before .md). The raw benchmark output is kept beside it
# (BENCH_RAW=FILE chooses). Installs wrk from Debian when it is missing and
# builds the servers with test/tools.sh (once; kube-apiserver takes long the
# first time). Benchmarks that need the shared community-v4.21 catalog
# beside the repository (../shared/testdata/fbc) skip without it, and the
# document says "skipped: …" where their figures would be
# (CATALOGSYNC_BENCH_COMMUNITY=DIR, an absolute path, points elsewhere).
# The peers step runs opm and catalogd-ref from ../shared/tools/peers on the
# same catalogs (CATALOGSYNC_SHARED=DIR names the shared folder elsewhere) and skips without
# them; it needs GNU time (/usr/bin/time, installed like wrk) and unshare.
# A full run first waits (BENCH_QUIET_WAIT, 10m) for a quiet machine.
# Exits non-zero when a benchmark failed, after writing the document.
set -euo pipefail
cd "$(dirname "$0")/.."

all_steps=(sync serve load peers micro weight)
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=("${all_steps[@]}")
for s in "${steps[@]}"; do
  case "$s" in sync|serve|load|peers|micro|weight) ;; *) echo "bench/run.sh: unknown step $s (want: ${all_steps[*]})" >&2; exit 2 ;; esac
done
quick=${BENCH_QUICK:-0}
partial=0
if [ "$quick" = 1 ] || [ ${#steps[@]} -ne ${#all_steps[@]} ]; then partial=1; fi
tmp=${TMPDIR:-/tmp}
if [ "$partial" = 1 ]; then
  out=${BENCH_OUT:-$tmp/catalogsync-benchmarks.md}
else
  out=${BENCH_OUT:-docs/benchmarks.md}
fi
raw=${BENCH_RAW:-$tmp/catalogsync-benchmarks-output.txt}

if ! command -v wrk >/dev/null || [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq wrk time >/dev/null
  else
    echo "bench/run.sh: wrk or GNU time is missing; install them (Debian: apt-get install wrk time) for the throughput and peer figures" >&2
  fi
fi
test/tools.sh build registry minio etcd kube-apiserver

# A race-detector build of the service would distort every figure.
unset CATALOGSYNC_E2E_RACE
work=$(mktemp -d "$tmp/catalogsync-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Generated catalogs, shared by the steps. Every temp folder of the steps
# (servers' data, stores, the built binary) goes under $work too, so none
# outlives the run.
export CATALOGSYNC_BENCH_WORKDIR=$work/data
mkdir -p "$work/data" "$work/tmp"

if [ "$quick" = 1 ]; then
  sync_n=1x own_n=1x serve_n=1x
  export CATALOGSYNC_BENCH_WRK_DURATION=2s
else
  # The project's own syncs are cheap next to the peers': five each, so a
  # median holds when the machine's state drifts for a few of them.
  sync_n=3x own_n=5x serve_n=5x
fi

info=$work/info
: >"$raw"
if [ "$quick" != 1 ]; then
  # The targets are judged on a quiet machine: build the largest test
  # binary first, then let the load of what ran before settle (up to
  # BENCH_QUIET_WAIT, a Go duration; 0 only checks). A machine that stays
  # busy is run on, and the document says so.
  go test -c -o "$work/tmp/warm.test" ./bench && rm -f "$work/tmp/warm.test"
  go run ./bench/report -wait-quiet "${BENCH_QUIET_WAIT:-10m}" >"$info"
fi
{
  echo "command: ${BENCH_QUICK:+BENCH_QUICK=$BENCH_QUICK }bench/run.sh${*:+ $*}"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "go: $(go env GOVERSION)"
  echo "quick: $quick"
  echo "load-start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$info"
start=$(date +%s)
failed=()

# quote ARGS...: the arguments as a shell would need them typed.
quote() {
  local out=() a q="'"
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then out+=("$a"); else out+=("'${a//$q/$q\\$q$q}'"); fi
  done
  echo "${out[*]}"
}

# run NAME ARGS...: runs `go test ARGS...`, appends its output to $raw and
# shows the result lines as they come.
run() {
  local name=$1; shift
  local cmd
  cmd="${CATALOGSYNC_BENCH_WRK_DURATION:+CATALOGSYNC_BENCH_WRK_DURATION=$CATALOGSYNC_BENCH_WRK_DURATION }go test $(quote "$@")"
  echo "step: $cmd" >>"$info"
  echo "== $name: $cmd" >&2
  set +e
  TMPDIR=$work/tmp go test "$@" 2>&1 | tee -a "$raw" | grep --line-buffered -E '^(Benchmark.*	|--- (FAIL|SKIP)|(ok|FAIL)[[:space:]])|^[[:space:]]+[a-z_]+_test\.go:[0-9]+:' >&2
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || [[ " ${failed[*]} " == *" $name "* ]] || failed+=("$name")
}

for s in "${steps[@]}"; do
  case "$s" in
  sync) # five syncs each; peak RSS and the floors come with them.
    # One test binary: the incremental figures are set beside the full
    # sync's of the same run.
    run sync -run '^$' -bench '^(BenchmarkSync|BenchmarkSyncIncremental)$' -benchtime "$own_n" -timeout 45m -v ./bench ;;
  serve) # cold starts, and status latency against a real kube-apiserver
    # (sync/status's own benchmark; its BenchmarkStatusThrottled is not in
    # the document)
    run serve -run '^$' -bench '^BenchmarkColdStart$' -benchtime "$serve_n" -timeout 30m -v ./bench
    run serve -run '^$' -bench '^BenchmarkStatusLatency$' -benchtime "$serve_n" -timeout 30m -v ./sync/status ;;
  load) # one wrk run is itself a measurement; so is one storm
    run load -run '^$' -bench '^(BenchmarkMetasWrk|BenchmarkWebhookStorm)$' -benchtime 1x -timeout 30m -v ./bench ;;
  peers) # opm and catalogd-ref on the same catalogs, the same way
    run peers -run '^$' -bench '^(BenchmarkPeerIngest|BenchmarkPeerColdStart)$' -benchtime "$sync_n" -timeout 30m -v ./bench
    run peers -run '^$' -bench '^BenchmarkPeerMetasWrk$' -benchtime 1x -timeout 30m -v ./bench ;;
  micro) # the packages' own benchmarks (not ./sync/status: serve runs its BenchmarkStatusLatency)
    if [ "$quick" = 1 ]; then micro_t=1x; else micro_t=1s; fi
    run micro -run '^$' -bench . -benchmem -benchtime "$micro_t" -timeout 30m -v \
      ./sync/fbc ./storage/catalog ./handlers/content ./storage/s3 ./sync/buildindex ;;
  weight) # the release binary: size, packages, init per start, idle serve RSS
    run weight -run '^$' -bench '^BenchmarkWeight(Reader)?$' -benchtime "$serve_n" -timeout 10m -v ./bench ;;
  esac
done

echo "load-end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$info"
echo "elapsed: $(($(date +%s) - start))" >>"$info"
detail=${out%.md}-detail.md
go run ./bench/report -info "$info" -detail "$work/benchmarks-detail.md" <"$raw" >"$work/benchmarks.md"
mv "$work/benchmarks.md" "$out"
mv "$work/benchmarks-detail.md" "$detail"
echo "bench/run.sh: wrote $out and $detail in $(($(date +%s) - start)) s (raw output: $raw)" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench/run.sh: failed: ${failed[*]} (see $raw)" >&2
  exit 1
fi
