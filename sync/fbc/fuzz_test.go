package fbc

import (
	"os"
	"testing"
)

// FuzzParse checks that the fast path produces exactly the reference
// path's objects and error outcome, reading in small and large chunks.
func FuzzParse(f *testing.F) {
	for _, in := range edgeCases {
		if len(in) < 4096 {
			f.Add([]byte(in))
		}
	}
	if data, err := os.ReadFile("testdata/tiny/configs/catalog.yaml"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameResult(t, "fuzz", data, false, 0)
		sameResult(t, "fuzz", data, false, 3)
		sameShape(t, "fuzz", data, false)
		sameBytesResult(t, "fuzz", data)
		g := yamlGen{choices: data}
		sameResult(t, "fuzz-generated", []byte(g.doc()), false, 0)
	})
}
