package asciiscan

import "golang.org/x/sys/cpu"

// wide reports whether the 32-byte AVX2 loops may run: most of what the
// scans cover lies in runs of hundreds of bytes or more (descriptions,
// icons, whole YAML blocks), where they take a quarter of the word
// loops' time.
var wide = cpu.X86.HasAVX2

// Each returns the offset of the first byte its word loop would stop at
// among the first len(b)&^31 bytes, or len(b)&^31.

//go:noescape
func jsonStringAVX2(b []byte) int

//go:noescape
func printableLinesAVX2(b []byte) int

//go:noescape
func indexAny3AVX2(b []byte, x, y, z byte) int
