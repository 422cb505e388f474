//go:build !chaos_nocas

package catalog

// publishSkipsCAS is false in every real build. Building with the tag
// chaos_nocas plants a bug, a publish that overwrites the pointer without
// its compare-and-swap, which the partition suite (test/chaos) must
// detect.
const publishSkipsCAS = false
