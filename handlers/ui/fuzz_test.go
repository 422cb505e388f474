package ui

import (
	"testing"
)

// FuzzBundleLine feeds arbitrary stored lines to what reads bundles
// without decoding them whole: nothing may panic, whatever the bytes.
func FuzzBundleLine(f *testing.F) {
	for _, o := range hostileObjects() {
		if len(o[3]) < 1<<16 {
			f.Add([]byte(o[3]))
		}
	}
	f.Add([]byte(`{"properties":[{"type":"olm.package","value":{"version":"1.0.0"`))
	f.Add([]byte(`{"properties":[{"type":"olm.csv.metadata","value":{"annotations":{"a":"\u00`))
	f.Fuzz(func(t *testing.T, line []byte) {
		bundleVersion(line)
		csvSummary(line)
		parseCSVMetadata(line)
		eachLine(line, func([]byte) error { return nil })
		_ = shorten(string(line), 7)
	})
}
