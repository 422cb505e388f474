//go:build !chaos_nocas

package catalog

// publishSkipsCAS is false in every real build. Building with the tag
// chaos_nocas plants a bug, a publish that overwrites the pointer without
// its compare-and-swap, which the partition suite (test/chaos) must
// detect.
const publishSkipsCAS = false

// leaseKeepsTime is true in every real build: a holder gives its lease up
// on its own clock (see Lease.renew). The planted build drops that too,
// so that the compare-and-swap is all that stands between a paused
// publisher and the pointer, as the suite needs to see the bug.
const leaseKeepsTime = true
