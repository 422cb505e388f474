// Package chaos runs three catalogsync replicas, MinIO, etcd with
// kube-apiserver, a Distribution registry and a client, each in its own
// network namespace on one bridge (addresses in 198.18.0.0/15), injects
// faults chosen from a seed (partitions, pauses, kills), records every
// operation with monotonic timestamps, and checks the history against the
// invariants of docs/partitions.md. It needs root and ip(8); without them,
// and under -short, its tests skip.
package chaos
