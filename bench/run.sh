#!/usr/bin/env bash
# Runs every benchmark against the real servers and prints Go's benchmark
# lines (each figure with its baseline from the same run). Installs wrk
# from Debian when it is missing. Needs the shared community-v4.21 catalog
# beside the repository (../shared/testdata/fbc); skips without it.
#
#   bench/run.sh            # all of them (about 10 minutes on 2 cores)
#   bench/run.sh Sync       # a subset, by benchmark name
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq wrk >/dev/null
  else
    echo "bench/run.sh: wrk is missing; install it (Debian: apt-get install wrk) for the throughput figures" >&2
  fi
fi
test/tools.sh build registry minio
filter=${1:-Sync|ColdStart|MetasWrk}
# Sync runs three times each; a wrk run is itself a 10 s measurement.
go test -run '^$' -bench "$filter" -benchtime 3x -timeout 40m ./bench 2>&1 | grep -vE '^(goos|goarch|pkg|cpu):' | grep -E '^(Benchmark|ok|FAIL|---|PASS)|_test.go'
