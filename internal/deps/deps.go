//go:build deps

// Package deps pins dependencies while packages that use them are written in
// parallel; it is removed once every import is real.
package deps

import (
	_ "github.com/blang/semver/v4"
	_ "github.com/go-git/go-git/v5/plumbing/format/gitignore"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/regclient/regclient"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "golang.org/x/text/cases"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "k8s.io/apimachinery/pkg/util/yaml"
	_ "sigs.k8s.io/yaml"
)
