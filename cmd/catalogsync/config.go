package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kong"

	"github.com/catalogsync/catalogsync/handlers/events"
	"github.com/catalogsync/catalogsync/handlers/webhook"
	"github.com/catalogsync/catalogsync/internal/truncate"
	"github.com/catalogsync/catalogsync/storage/catalog"
	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/engine"
	"github.com/catalogsync/catalogsync/sync/sigpolicy"
	"github.com/catalogsync/catalogsync/sync/source"
)

// Config is the catalogs file (--config), as written: decoded strictly,
// so every key is one of its fields. loadConfig reads it once, checks it
// and builds the catalogs from it; the settings resolver reads its
// storage.dir and platform from the same load.
type Config struct {
	// Storage says where catalogs are stored.
	Storage StorageConfig `json:"storage"`
	// Platform picks the manifest of multi-platform images (os/arch).
	Platform string `json:"platform,omitempty"`
	// Registries configures hosts that need plain HTTP or self-signed TLS.
	Registries []source.Host `json:"registries,omitempty"`
	// Catalogs to keep synced, as written; catalogs() is what is synced.
	Catalogs []catalogEntry `json:"catalogs"`
	// SignaturePolicy requires signatures (by keys, or keyless by an
	// identity) of images under each prefix; named rules may be
	// referenced by catalogs.
	SignaturePolicy []sigpolicy.Rule `json:"signaturePolicy,omitempty"`
	// Webhooks configures registry push receivers, under /hooks/.
	Webhooks webhook.Config `json:"webhooks,omitempty"`
	// Events enables the CloudEvents endpoint at /events (Knative Broker
	// triggers, PingSource, ApiServerSource) when set.
	Events *events.Config `json:"events,omitempty"`

	// specs are Catalogs as the service syncs them, references parsed.
	specs []catalogspec.Catalog
}

// StorageConfig selects the store.
type StorageConfig struct {
	// Dir is the local filesystem store (the embedded default).
	Dir string `json:"dir,omitempty"`
}

// catalogEntry is one entry of the file's catalogs, as written.
type catalogEntry struct {
	Name                string `json:"name"`
	Image               string `json:"image"`
	PollIntervalMinutes int    `json:"pollIntervalMinutes,omitempty"`
	// Signature is the catalog's own signature requirement (a named rule
	// of signaturePolicy, or keys or keyless inline); it wins over the
	// prefix rules.
	Signature *sigpolicy.CatalogRule `json:"signature,omitempty"`
}

// loadConfig reads, checks and resolves the catalogs file at path: the
// one place it is parsed, and each catalog's image reference with it.
func loadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := decodeConfig(path, b, &c); err != nil {
		return c, err
	}
	if c.specs, err = catalogSpecs(path, c.Catalogs); err != nil {
		return c, err
	}
	if err := c.resolveSecrets(path); err != nil {
		return c, err
	}
	if c.Events != nil && len(c.Events.HostAliases) == 0 {
		c.Events.HostAliases = c.Webhooks.HostAliases
	}
	return c, nil
}

// catalogSpecs checks the file's catalogs and builds them.
func catalogSpecs(path string, entries []catalogEntry) ([]catalogspec.Catalog, error) {
	out := make([]catalogspec.Catalog, 0, len(entries))
	seen := map[string]bool{}
	for i, cat := range entries {
		if !catalog.ValidName(cat.Name) {
			return nil, fmt.Errorf("%s: catalogs[%d]: name %q: %s", path, i, truncate.Text(cat.Name, 300), nameProblem(cat.Name))
		}
		if seen[cat.Name] {
			return nil, fmt.Errorf("%s: catalogs[%d]: duplicate name %q", path, i, cat.Name)
		}
		seen[cat.Name] = true
		img := catalogspec.ParseImage(cat.Image)
		r, ok := img.Ref()
		if !ok {
			return nil, fmt.Errorf("%s: catalogs[%d]: %w", path, i, img.Err())
		}
		if cat.Signature != nil {
			if err := sigpolicy.Checkable(r); err != nil {
				return nil, fmt.Errorf("%s: catalogs[%d] (%s): signature: %w", path, i, cat.Name, err)
			}
		}
		poll, err := engine.PollInterval(float64(cat.PollIntervalMinutes))
		if err != nil {
			return nil, fmt.Errorf("%s: catalogs[%d]: %w", path, i, err)
		}
		out = append(out, catalogspec.Catalog{Name: cat.Name, Image: img, PollInterval: poll})
	}
	return out, nil
}

// resolveSecrets replaces the file's "env:NAME" credentials and secrets
// with the variables' values.
func (c *Config) resolveSecrets(path string) error {
	for i := range c.Registries {
		h := &c.Registries[i]
		var err error
		if h.Username, err = fromEnv(h.Username); err == nil {
			h.Password, err = fromEnv(h.Password)
		}
		if err != nil {
			return fmt.Errorf("%s: registries[%d] (%s): credentials: %w", path, i, h.Name, err)
		}
	}
	for i := range c.Webhooks.Receivers {
		rc := &c.Webhooks.Receivers[i]
		v, err := fromEnv(rc.Secret)
		if err != nil {
			return fmt.Errorf("%s: webhooks.receivers[%d] (%s): secret: %w", path, i, rc.Name, err)
		}
		rc.Secret = v
	}
	if c.Events != nil {
		v, err := fromEnv(c.Events.Token)
		if err != nil {
			return fmt.Errorf("%s: events.token: %w", path, err)
		}
		c.Events.Token = v
	}
	return nil
}

// loadedConfig is one load of the config file: what loadConfig returned.
type loadedConfig struct {
	path string
	cfg  Config
	err  error
}

func loadOnce(path string) *loadedConfig {
	cfg, err := loadConfig(path)
	return &loadedConfig{path: path, cfg: cfg, err: err}
}

// load returns the file --config names, loaded once whoever asks first:
// the settings resolver or the command.
func (c *configFlag) load() (Config, error) {
	if c.loaded == nil || c.loaded.path != c.Config {
		c.loaded = loadOnce(c.Config)
	}
	return c.loaded.cfg, c.loaded.err
}

func (c *configFlag) configFile() *configFlag { return c }

// handConfig gives the selected command the config file the resolver
// loaded, if it takes --config.
func handConfig(kctx *kong.Context, loaded *loadedConfig) {
	node := kctx.Selected()
	if loaded == nil || node == nil || !node.Target.CanAddr() {
		return
	}
	if cmd, ok := node.Target.Addr().Interface().(interface{ configFile() *configFlag }); ok {
		cmd.configFile().loaded = loaded
	}
}

// catalogs are the file's catalogs, as loadConfig built them.
func (c Config) catalogs() []catalogspec.Catalog { return c.specs }

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
