package fbc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// TestOpmParity replays the differences test/oracle found between this
// package and opm validate / catalogd-ref store (v1.50.0), each fixed: the
// reproducers live in test/oracle/testdata, the rules below are what this
// package reports for them now: opm's rule among them (none: opm found
// the catalog valid; opm stops at the first problem of loading and
// conversion, so there may be more).
func TestOpmParity(t *testing.T) {
	for name, want := range map[string][]string{
		"cycle-below-head-skipped": {RuleCycle},
		"head-replaces-skipped":    nil,
		"csv-metadata-typed":       {RuleProperty},
		"channel-priority":         {RuleProperty},
		"bundle-object-yaml":       {RuleProperty},
		"bundle-object-shapes":     nil,
		"default-channel-unknown":  {RuleChannelEmpty},
		"last-channel-entries":     {RuleImage, RulePackageProperty},
		"deprecation-message":      {RuleDeprecationMessage},
		"version-release":          {RuleVersionDuplicate},
		"schemaless":               {RuleSchemaMissing},
		"bundle-object-load-stage": {RuleBundlePackage, RuleProperty},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "test", "oracle", "testdata", "repro-"+name, "fbc")
			got := validateDir(t, dir)
			if !slices.Equal(got, want) {
				t.Errorf("rules %v, opm: %v", got, want)
			}
		})
	}
}

// validateDir parses every file of dir (one level, sorted) and returns the
// sorted rules that fired.
func validateDir(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in %s: %v", dir, err)
	}
	sort.Strings(files)
	v := NewValidator()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		err = Parse(bufio.NewReader(f), func(o Object) error { v.Add(filepath.Base(p), o); return nil })
		f.Close()
		if err != nil {
			t.Fatalf("parse %s: %v", p, err)
		}
	}
	var rules []string
	var j interface{ Unwrap() []error }
	if err := v.Validate(); errors.As(err, &j) {
		for _, e := range j.Unwrap() {
			var ve *ValidationError
			if errors.As(e, &ve) {
				rules = append(rules, ve.Rule)
			}
		}
	} else if err != nil {
		t.Fatal(err)
	}
	sort.Strings(rules)
	return slices.Compact(rules)
}
