// Package openapi holds the OpenAPI document of catalogsync's REST API, the
// source of truth the handlers are tested against (handlers/api).
package openapi

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.yaml
var spec []byte

// Spec returns the OpenAPI document (YAML). Each call returns a fresh
// copy, so callers may keep or change it.
func Spec() []byte { return bytes.Clone(spec) }
