package acceptgzip

import "testing"

// gzip is taken when listed (any case, x-gzip too) with a q above zero,
// or a q that does not parse; "*", q=0 and other codings are not gzip.
func TestInReadsAcceptEncoding(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"deflate, GZIP;q=0.5"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"br", "gzip"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; Q=0.0"}, false},
		{[]string{"gzip;q=zz"}, true},
		{[]string{"gzip;level=1;q=0"}, false},
		{[]string{"*"}, false},
		{[]string{"identity"}, false},
		{[]string{"br, zstd"}, false},
		{[]string{"gzipx, xgzip"}, false},
	} {
		if got := In(c.values); got != c.want {
			t.Errorf("In(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}
