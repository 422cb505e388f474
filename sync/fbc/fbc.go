// Package fbc reads OLM File-Based Catalog files and validates whole
// catalogs. It does no I/O of its own: Parse works on an io.Reader and the
// Validator on the objects Parse returns.
//
// Parse produces, for every object, the exact bytes catalogd serves for it
// (operator-registry's declcfg.Meta.Blob: compact JSON, keys sorted, no
// HTML escaping, one trailing newline). operator-registry gets there by
// decoding YAML with yaml.v2, re-encoding it as JSON, decoding that into a
// map and encoding the map again. Parse takes a shorter road with the same
// result: a parser for the YAML subset catalogs are written in (anything
// else goes through yaml.v2) and a JSON parser build one small tree, which
// a single encoder writes. The reference road is kept in the tests, which
// compare both byte for byte (real catalogs, edge cases, FuzzParse).
//
// The Validator applies the rules of operator-registry's declcfg.LoadFS,
// declcfg.ConvertToModel and model.Validate (v1.50.0, as `opm validate`
// runs them), reporting every violation with the Rule it breaks; typed
// property values (olm.csv.metadata among them) are judged as
// property.Parse decodes them. test/oracle checks both against the real
// opm and catalogd on generated catalogs. Not checked, as opm does not
// either: image references and skipRange syntax.
package fbc

import "errors"

// ErrInvalid is wrapped by every parse and validation error, so callers can
// tell an invalid catalog from an I/O failure with errors.Is.
var ErrInvalid = errors.New("invalid catalog")

// Object is one FBC object, normalized.
type Object struct {
	// Schema, Package and Name come from the top-level keys matched
	// case-insensitively, as operator-registry reads them.
	Schema, Package, Name string
	// Blob is the object as catalogd serves it, ending in "\n". It is
	// allocated for this object and the caller may keep it, unless Parse
	// was given BorrowBlobs.
	Blob []byte
	// Ref holds what validation needs; nil for schemas it does not know.
	Ref *Ref
	// Root is the parsed object Blob encodes, for a reader of its
	// structure that would otherwise decode Blob again. Valid only until
	// fn returns, whatever the options; a caller keeping the Object
	// clears it.
	Root Value
}
