// Package acceptgzip reads whether a client accepts a gzip answer, the
// one way the content API and /metrics decide to compress.
package acceptgzip

import (
	"strconv"
	"strings"
)

// In reports whether Accept-Encoding values list gzip (or x-gzip) with a
// non-zero q. A "*" is not taken as gzip, as catalogd's gzhttp does not.
func In(values []string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" {
				continue
			}
			if q, ok := qValue(params); !ok || q > 0 {
				return true
			}
		}
	}
	return false
}

// qValue returns the q parameter of an Accept-Encoding item; ok is false
// when there is none (q=1) or it does not parse (taken as acceptable).
func qValue(params string) (float64, bool) {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, false
			}
			return q, true
		}
	}
	return 0, false
}
