package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
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
	// SignaturePolicy requires signatures (by keys, or keyless by an
	// identity) of images under each prefix; named rules may be
	// referenced by catalogs.
	SignaturePolicy []sigpolicy.Rule `json:"signaturePolicy,omitempty"`
	// Webhooks configures registry push receivers, under /hooks/.
	Webhooks webhook.Config `json:"webhooks,omitempty"`
	// Events enables the CloudEvents endpoint at /events (Knative Broker
	// triggers, PingSource, ApiServerSource) when set.
	Events *events.Config `json:"events,omitempty"`
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
	// Signature is the catalog's own signature requirement (a named rule
	// of signaturePolicy, or keys or keyless inline); it wins over the
	// prefix rules.
	Signature *sigpolicy.CatalogRule `json:"signature,omitempty"`
}

func loadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := decodeConfig(path, b, &c); err != nil {
		return c, err
	}
	seen := map[string]bool{}
	for i, cat := range c.Catalogs {
		if !catalog.ValidName(cat.Name) {
			return c, fmt.Errorf("%s: catalogs[%d]: name %q: %s", path, i, truncate.Text(cat.Name, 300), nameProblem(cat.Name))
		}
		if seen[cat.Name] {
			return c, fmt.Errorf("%s: catalogs[%d]: duplicate name %q", path, i, cat.Name)
		}
		seen[cat.Name] = true
		if _, err := source.ParseRef(cat.Image); err != nil {
			return c, fmt.Errorf("%s: catalogs[%d]: %w", path, i, err)
		}
		if cat.Signature != nil {
			if err := sigpolicy.Checkable(cat.Image); err != nil {
				return c, fmt.Errorf("%s: catalogs[%d] (%s): signature: %w", path, i, cat.Name, err)
			}
		}
		if _, err := engine.PollInterval(float64(cat.PollIntervalMinutes)); err != nil {
			return c, fmt.Errorf("%s: catalogs[%d]: %w", path, i, err)
		}
	}
	for i := range c.Registries {
		h := &c.Registries[i]
		var err error
		if h.Username, err = fromEnv(h.Username); err == nil {
			h.Password, err = fromEnv(h.Password)
		}
		if err != nil {
			return c, fmt.Errorf("%s: registries[%d] (%s): credentials: %w", path, i, h.Name, err)
		}
	}
	for i := range c.Webhooks.Receivers {
		rc := &c.Webhooks.Receivers[i]
		v, err := fromEnv(rc.Secret)
		if err != nil {
			return c, fmt.Errorf("%s: webhooks.receivers[%d] (%s): secret: %w", path, i, rc.Name, err)
		}
		rc.Secret = v
	}
	if c.Events != nil {
		v, err := fromEnv(c.Events.Token)
		if err != nil {
			return c, fmt.Errorf("%s: events.token: %w", path, err)
		}
		c.Events.Token = v
		if len(c.Events.HostAliases) == 0 {
			c.Events.HostAliases = c.Webhooks.HostAliases
		}
	}
	return c, nil
}

// fromEnv resolves "env:NAME" to the variable's value, so secrets can come
// from a Kubernetes Secret through the environment instead of the file.
func fromEnv(v string) (string, error) {
	name, ok := strings.CutPrefix(v, "env:")
	if !ok {
		return v, nil
	}
	val, set := os.LookupEnv(name)
	if !set || val == "" {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return val, nil
}

func (c Config) catalogs() []pipeline.Catalog {
	var out []pipeline.Catalog
	for _, cat := range c.Catalogs {
		out = append(out, pipeline.Catalog{Name: cat.Name, Image: cat.Image, PollInterval: pollInterval(cat.PollIntervalMinutes)})
	}
	return out
}

// pollInterval is a checked config value (loadConfig refused bad ones).
func pollInterval(minutes int) time.Duration {
	d, _ := engine.PollInterval(float64(minutes))
	return d
}

// signatures is a config file's signature policy: the rules and the
// catalogs' own requirements.
type signatures struct {
	rules    []sigpolicy.Rule
	catalogs map[string]sigpolicy.CatalogRule
}

func (c Config) signatures() signatures {
	out := signatures{rules: c.SignaturePolicy, catalogs: map[string]sigpolicy.CatalogRule{}}
	for _, cat := range c.Catalogs {
		if cat.Signature != nil {
			out.catalogs[cat.Name] = *cat.Signature
		}
	}
	return out
}
