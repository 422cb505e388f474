package fbc

// Tests written for mutants of the validator found alive (docs/testing.md).

import (
	"slices"
	"strings"
	"testing"
)

// Property values opm decodes without complaint: null leaves a field (or
// the whole value) unset, and an integer fits an int field.
func TestValidateTypedValuesAccepted(t *testing.T) {
	gvk := "- type: olm.gvk\n  value: {group: foo.io, kind: Foo, version: v1}"
	for name, with := range map[string]string{
		"null field":       "- type: olm.gvk\n  value: {group: null, kind: Foo, version: v1}",
		"null value":       "- type: olm.gvk\n  value: null",
		"null in a list":   "- type: olm.csv.metadata\n  value: {keywords: [a, null], maintainers: null, labels: {a: null}}",
		"integer priority": "- type: olm.channel\n  value: {channelName: stable, priority: 3}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := validate(t, map[string]string{"catalog.yaml": strings.Replace(validCatalog, gvk, with, 1)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Deprecation entries after a duplicate one are still checked.
func TestValidateEntriesAfterDuplicateDeprecationEntry(t *testing.T) {
	_, err := validate(t, map[string]string{"catalog.yaml": validCatalog + "---\nschema: olm.deprecations\npackage: foo\nentries: [{reference: {schema: olm.package}, message: m}, {reference: {schema: olm.package}, message: m}, {reference: {schema: olm.bundle, name: foo.v9}, message: m}]\n"})
	if err == nil {
		t.Fatal("no error")
	}
	var msgs []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		msgs = append(msgs, e.(*ValidationError).Msg)
	}
	if want := []string{`duplicate deprecation entry for olm.package ""`, `cannot deprecate bundle "foo.v9": bundle not found`}; !slices.Equal(msgs, want) {
		t.Fatalf("errors %q, want %q", msgs, want)
	}
}
