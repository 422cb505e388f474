#!/usr/bin/env bash
# Builds the real servers the tests talk to, once, into a cache folder outside
# the repo, keyed by version. Later runs (and CI on the same machine) reuse it.
#
#   test/tools.sh build [registry|minio|etcd|kube-apiserver|all]...
#   test/tools.sh path NAME      # prints the binary's path (builds it if absent)
#   test/tools.sh have NAME      # prints the path only if already built (exit 1 otherwise)
#   test/tools.sh dir            # prints the cache folder
#   test/tools.sh path chromium  # Debian's chromium for the UI tests (apt-get installs it when absent)
#   test/tools.sh path golangci-lint  # the linter test/lint.sh runs
#
# Everything comes from the Go module proxy; recipes and pinned versions are
# the ones known to build with the machine's Go toolchain.
set -euo pipefail

CACHE="${CATALOGSYNC_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogsync/tools}"

REGISTRY_VERSION=v3.1.2
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
ETCD_VERSION=v3.7.3
KUBE_VERSION=v1.37.2
KUBE_STAGING_VERSION=v0.37.2
GREMLINS_VERSION=v0.6.0
REDOCLY_VERSION=2.77.0
GOLANGCI_LINT_VERSION=v2.15.0

log() { printf '%s tools: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# dest NAME -> the folder for NAME at its pinned version.
dest() {
  case "$1" in
    registry) echo "$CACHE/registry-$REGISTRY_VERSION" ;;
    minio) echo "$CACHE/minio-$MINIO_VERSION" ;;
    etcd) echo "$CACHE/etcd-$ETCD_VERSION" ;;
    kube-apiserver|kube|kubectl) echo "$CACHE/kube-$KUBE_VERSION" ;;
    gremlins) echo "$CACHE/gremlins-$GREMLINS_VERSION" ;;
    redocly) echo "$CACHE/redocly-$REDOCLY_VERSION" ;;
    golangci-lint) echo "$CACHE/golangci-lint-$GOLANGCI_LINT_VERSION" ;;
    *) echo "unknown tool: $1" >&2; exit 2 ;;
  esac
}

bin_of() {
  case "$1" in
    chromium) command -v chromium || true ;;
    kube-apiserver|kube) echo "$(dest "$1")/kube-apiserver" ;;
    redocly) echo "$(dest "$1")/node_modules/.bin/redocly" ;;
    *) echo "$(dest "$1")/$1" ;;
  esac
}

# Builds happen in a temp folder and move into place at the end, so an
# interrupted build never leaves a half-written binary that looks complete.
# A lock keeps two concurrent callers from building the same tool twice.
with_lock() {
  local name=$1; shift
  mkdir -p "$CACHE"
  exec {fd}>"$CACHE/.$name.lock"
  flock "$fd"
  "$@"
  flock -u "$fd"
}

build_registry() {
  local d; d=$(dest registry)
  [ -x "$d/registry" ] && return 0
  log "building registry $REGISTRY_VERSION (about 5 min on 2 cores)"
  local tmp; tmp=$(mktemp -d "$CACHE/.registry.XXXX")
  GOBIN="$tmp" CGO_ENABLED=0 go install "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
  rm -rf "$d"; mv "$tmp" "$d"
  log "registry ready: $d/registry"
}

build_minio() {
  local d; d=$(dest minio)
  [ -x "$d/minio" ] && return 0
  log "building minio $MINIO_VERSION (about 12 min on 2 cores)"
  local tmp; tmp=$(mktemp -d "$CACHE/.minio.XXXX")
  GOBIN="$tmp" CGO_ENABLED=0 go install "github.com/minio/minio@$MINIO_VERSION"
  rm -rf "$d"; mv "$tmp" "$d"
  log "minio ready: $d/minio"
}

build_etcd() {
  local d; d=$(dest etcd)
  [ -x "$d/etcd" ] && return 0
  log "building etcd $ETCD_VERSION (about 4 min on 2 cores)"
  local tmp; tmp=$(mktemp -d "$CACHE/.etcd.XXXX")
  # `go install pkg@version` refuses modules with replace directives, so
  # build from a throwaway module that requires the server.
  mkdir -p "$tmp/src"
  (
    cd "$tmp/src"
    go mod init etcdbuild >/dev/null 2>&1
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    go mod edit -require "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o "$tmp/etcd" go.etcd.io/etcd/server/v3
  )
  rm -rf "$tmp/src"
  rm -rf "$d"; mv "$tmp" "$d"
  log "etcd ready: $d/etcd"
}

build_kube() {
  local d; d=$(dest kube-apiserver)
  [ -x "$d/kube-apiserver" ] && [ -x "$d/kubectl" ] && return 0
  log "building kube-apiserver and kubectl $KUBE_VERSION (about 25 min on 2 cores)"
  local tmp; tmp=$(mktemp -d "$CACHE/.kube.XXXX")
  mkdir -p "$tmp/src"
  (
    cd "$tmp/src"
    go mod init kubebuild >/dev/null 2>&1
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    # kubernetes requires its staging modules at v0.0.0; point each at the
    # published version that matches the release.
    local staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
      cloud-provider cluster-bootstrap code-generator component-base component-helpers
      controller-manager cri-api cri-client cri-streaming csi-translation-lib
      dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
      kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
      pod-security-admission sample-apiserver streaming"
    go mod edit -require "k8s.io/kubernetes@$KUBE_VERSION"
    for m in $staging; do
      go mod edit -replace "k8s.io/$m=k8s.io/$m@$KUBE_STAGING_VERSION"
    done
    GOFLAGS=-mod=mod go mod tidy
    CGO_ENABLED=0 go build -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    CGO_ENABLED=0 go build -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
  )
  rm -rf "$tmp/src"
  rm -rf "$d"; mv "$tmp" "$d"
  log "kube-apiserver ready: $d"
}

# gremlins: mutation testing (test/mutation.sh); not needed by the tests.
build_gremlins() {
  local d; d=$(dest gremlins)
  [ -x "$d/gremlins" ] && return 0
  log "building gremlins $GREMLINS_VERSION (about 1 min)"
  local tmp; tmp=$(mktemp -d "$CACHE/.gremlins.XXXX")
  GOBIN="$tmp" CGO_ENABLED=0 go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
  rm -rf "$d"; mv "$tmp" "$d"
  log "gremlins ready: $d/gremlins"
}

# golangci-lint: the linter test/lint.sh runs (config in .golangci.yml).
build_golangci_lint() {
  local d; d=$(dest golangci-lint)
  [ -x "$d/golangci-lint" ] && return 0
  log "building golangci-lint $GOLANGCI_LINT_VERSION (about 4 min on 2 cores)"
  local tmp; tmp=$(mktemp -d "$CACHE/.golangci-lint.XXXX")
  GOBIN="$tmp" CGO_ENABLED=0 go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
  rm -rf "$d"; mv "$tmp" "$d"
  log "golangci-lint ready: $d/golangci-lint"
}

# redocly: Redocly CLI from the npm registry, which checks the REST spec
# (openapi/openapi.yaml) against its recommended rules in test/run.sh.
build_redocly() {
  local d; d=$(dest redocly)
  [ -x "$d/node_modules/.bin/redocly" ] && return 0
  command -v npm >/dev/null || { log "npm is required for Redocly CLI (Debian: apt-get install npm)"; return 1; }
  log "installing @redocly/cli $REDOCLY_VERSION with npm"
  local tmp; tmp=$(mktemp -d "$CACHE/.redocly.XXXX")
  npm install --prefix "$tmp" --no-audit --no-fund --silent "@redocly/cli@$REDOCLY_VERSION"
  rm -rf "$d"; mv "$tmp" "$d"
  log "redocly ready: $d/node_modules/.bin/redocly"
}

# chromium is the one tool that is a system package: the UI tests drive
# Debian's headless chromium, installed with apt-get when absent.
build_chromium() {
  command -v chromium >/dev/null && return 0
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  log "installing Debian's chromium with apt-get"
  # Not fatal: without it the UI browser tests skip and say why.
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium; } ||
    log "could not install chromium; the UI browser tests will skip"
}

build_one() {
  case "$1" in
    chromium) with_lock chromium build_chromium ;;
    registry) with_lock registry build_registry ;;
    minio) with_lock minio build_minio ;;
    etcd) with_lock etcd build_etcd ;;
    kube-apiserver|kube|kubectl) with_lock kube build_kube ;;
    gremlins) with_lock gremlins build_gremlins ;;
    golangci-lint) with_lock golangci-lint build_golangci_lint ;;
    redocly) with_lock redocly build_redocly ;;
    all) for t in registry etcd minio kube-apiserver; do build_one "$t"; done ;;
    *) echo "unknown tool: $1" >&2; exit 2 ;;
  esac
}

cmd=${1:-build}; shift || true
case "$cmd" in
  build) [ $# -eq 0 ] && set -- all; for t in "$@"; do build_one "$t"; done ;;
  path) build_one "$1"; bin_of "$1" ;;
  # Never builds: lets callers skip when a slow tool is missing (or still building).
  have) b=$(bin_of "$1"); [ -x "$b" ] || exit 1; echo "$b" ;;
  dir) echo "$CACHE" ;;
  *) echo "usage: $0 build [tool...] | path TOOL | have TOOL | dir" >&2; exit 2 ;;
esac
