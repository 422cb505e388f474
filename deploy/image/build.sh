#!/usr/bin/env bash
# Builds catalogsync's container image without a container engine (no
# Docker needed): the static binary on a scratch base with a CA bundle and
# the non-root user 65532, written as an OCI layout (dist/oci by default)
# and, with --push REF, pushed to a registry with docker login's
# credentials. Needs Go and git; the CA bundle comes from Debian's
# ca-certificates (--ca-bundle FILE for another).
#
#   deploy/image/build.sh                                  # dist/oci, tag latest
#   deploy/image/build.sh --push registry.example.test/catalogsync/catalogsync:v1
#   deploy/image/build.sh --platform linux/amd64,linux/arm64 --push REF
#
# Other flags: --oci DIR, --tag TAG, --version V, --plain-http (go run ./deploy/image -h).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go run ./deploy/image "$@"
