package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
)

// catalog is the catalog sync runs, from --name and --image and, with
// --config, the file's catalog of that name; cfg is the file (empty
// without --config).
func (c *syncCmd) catalog() (cfg Config, cat catalogspec.Catalog, err error) {
	if c.Name == "" {
		return cfg, cat, usageError{Msg: "sync needs --name and --image, or --config and --name of one of its catalogs"}
	}
	if !catalog.ValidName(c.Name) {
		return cfg, cat, usageError{Msg: fmt.Sprintf("--name %q: %s", truncate.Text(c.Name, 300), nameProblem(c.Name))}
	}
	cat = catalogspec.Catalog{Name: c.Name, Image: catalogspec.ParseImage(c.Image)}
	if c.Config == "" {
		if c.Image == "" {
			return cfg, cat, usageError{Msg: "sync needs --name and --image, or --config and --name of one of its catalogs"}
		}
		return cfg, cat, nil
	}
	if cfg, err = c.load(); err != nil {
		return cfg, cat, err
	}
	if c.Image != "" {
		return cfg, cat, nil
	}
	var names []string
	for _, fc := range cfg.catalogs() {
		if fc.Name == c.Name {
			return cfg, fc, nil
		}
		names = append(names, fc.Name)
	}
	slices.Sort(names)
	listed := "none"
	if len(names) > 0 {
		listed = truncate.Text(strings.Join(names, ", "), 300)
	}
	return cfg, cat, usageError{Msg: fmt.Sprintf("--name %q is not a catalog of %s (it lists %s); give --image to sync it", c.Name, c.Config, listed)}
}
