// Package oracle is a differential test: it generates small File-Based
// Catalogs from a seed and checks that catalogsync's parser and validator
// (sync/fbc, read the way sync/buildindex and the pipeline read a
// directory) agree with the reference binaries in ../shared/tools/peers:
// `opm validate` for the verdict and the rule that fired, `catalogd-ref
// store` for what is refused and, byte for byte, what is stored. A case
// that disagrees is shrunk and written to testdata/. See docs/oracle.md.
package oracle
