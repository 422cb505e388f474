//go:build chaos_nocas

package catalog

// publishSkipsCAS plants a bug for the partition suite: see plant_off.go.
const publishSkipsCAS = true

// leaseKeepsTime: see plant_off.go.
const leaseKeepsTime = false
