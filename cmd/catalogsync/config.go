package main

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/storage/catalog"
	csync "github.com/catalogsync/catalogsync/sync"
	"github.com/catalogsync/catalogsync/sync/source"
)

// Config is the file `serve` reads when no cluster provides catalogs.
type Config struct {
	// Storage says where catalogs are stored.
	Storage StorageConfig `json:"storage"`
	// Platform picks the manifest of multi-platform images (os/arch).
	Platform string `json:"platform,omitempty"`
	// Registries configures hosts that need plain HTTP or self-signed TLS.
	Registries []source.Host `json:"registries,omitempty"`
	// Catalogs to keep synced.
	Catalogs []CatalogConfig `json:"catalogs"`
}

// StorageConfig selects the store.
type StorageConfig struct {
	// Dir is the local filesystem store (the embedded default).
	Dir string `json:"dir,omitempty"`
}

// CatalogConfig is one catalog to sync.
type CatalogConfig struct {
	Name                string `json:"name"`
	Image               string `json:"image"`
	PollIntervalMinutes int    `json:"pollIntervalMinutes,omitempty"`
}

func loadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, cat := range c.Catalogs {
		if !catalog.ValidName(cat.Name) {
			return c, fmt.Errorf("%s: catalogs[%d]: name %q is not a DNS-1123 subdomain", path, i, cat.Name)
		}
		if seen[cat.Name] {
			return c, fmt.Errorf("%s: catalogs[%d]: duplicate name %q", path, i, cat.Name)
		}
		seen[cat.Name] = true
		if _, err := source.ParseRef(cat.Image); err != nil {
			return c, fmt.Errorf("%s: catalogs[%d]: %w", path, i, err)
		}
		if cat.PollIntervalMinutes < 0 {
			return c, fmt.Errorf("%s: catalogs[%d]: pollIntervalMinutes must not be negative", path, i)
		}
	}
	return c, nil
}

func (c Config) catalogs() []csync.Catalog {
	var out []csync.Catalog
	for _, cat := range c.Catalogs {
		out = append(out, csync.Catalog{Name: cat.Name, Image: cat.Image, PollInterval: time.Duration(cat.PollIntervalMinutes) * time.Minute})
	}
	return out
}
