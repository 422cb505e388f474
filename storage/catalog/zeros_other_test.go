//go:build !unix

package catalog

import "testing"

// zeroBytes returns n zero bytes.
func zeroBytes(t *testing.T, n int) []byte { return make([]byte, n) }
