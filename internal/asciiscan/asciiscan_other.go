//go:build !amd64

package asciiscan

// wide is false: only amd64 has the 32-byte loops.
const wide = false

func jsonStringAVX2([]byte) int                  { panic("asciiscan: no AVX2") }
func printableLinesAVX2([]byte) int              { panic("asciiscan: no AVX2") }
func indexAny3AVX2([]byte, byte, byte, byte) int { panic("asciiscan: no AVX2") }
