package main

import (
	"context"
	"strings"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// maxStoredNames bounds the stored catalogs named in the no-catalog warning.
const maxStoredNames = 20

// logSurfaces logs once at start what each surface needs: the REST API's
// reads and POST (a token, open, or closed; a client certificate too
// with --tls-client-ca-file), /events (token, audience, insecure or off),
// the webhook receivers, and the UI and metrics. It warns when POST is
// refused to everyone and when no catalog is configured, since both look
// like a broken server.
func (c *serveCmd) logSurfaces(ctx context.Context, s *server, apiToken string) {
	api := "closed"
	switch {
	case apiToken != "":
		api = "token"
	case c.APIOpen:
		api = "open"
	}
	read, post, ui, mtr := "open", api, "open", "open"
	if c.TLSClientCA != "" {
		const cert = "client-certificate"
		read, mtr = cert, cert
		if !c.UIOpen {
			ui = cert
		}
		switch api {
		case "token":
			post = "token+" + cert
		case "open":
			post = cert
		}
	}
	s.log.Info("surfaces", "api.read", read, "api.post", post, "events", eventsAccess(s.cfg),
		"webhooks", len(s.cfg.Webhooks.Receivers), "ui", ui, "metrics", mtr, "content", "open")
	if api == "closed" {
		s.log.Warn("the REST API refuses every POST (401): set " + envAPIToken +
			" and send \"Authorization: Bearer <token>\", or start with --api-open to accept POST without a token")
	}
	if !c.ClusterCatalogs && len(s.cfg.Catalogs) == 0 {
		s.log.Warn("NO CATALOG IS CONFIGURED: nothing is synced or served; list catalogs (name, image) in a config file"+
			" given with --config, or sync the cluster's ClusterCatalogs with --clustercatalogs",
			"stored", storedCatalogs(ctx, s.store))
	}
}

// eventsAccess says what /events needs: "off" when not configured.
func eventsAccess(cfg Config) string {
	if cfg.Events == nil {
		return "off"
	}
	var need []string
	if cfg.Events.Token != "" {
		need = append(need, "token")
	}
	if cfg.Events.Audience != "" {
		need = append(need, "audience")
	}
	if len(need) == 0 && cfg.Events.Insecure {
		return "insecure"
	}
	return strings.Join(need, "+")
}

// storedCatalogs names the catalogs the store holds a published pointer
// of (catalogs/<name>/current), at most maxStoredNames; none when the
// store cannot be listed in a few seconds. Called only when no catalog is
// configured, so a start that serves something never pays for the list.
func storedCatalogs(ctx context.Context, st storage.Store) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	infos, err := st.List(ctx, "catalogs/")
	if err != nil {
		return nil
	}
	names := []string{}
	for _, in := range infos {
		name, ok := strings.CutSuffix(strings.TrimPrefix(in.Key, "catalogs/"), "/current")
		if ok && !strings.Contains(name, "/") && len(names) < maxStoredNames {
			names = append(names, name)
		}
	}
	return names
}
