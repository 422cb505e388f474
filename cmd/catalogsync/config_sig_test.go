package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigSignatures: the signature policy and a catalog's own
// requirement are read from the config file (the shape docs/registries.md
// shows), and a misspelt key is refused.
func TestConfigSignatures(t *testing.T) {
	const cfg = `
storage: {dir: /tmp/x}
signaturePolicy:
  - prefix: registry.example.test/acme
    keys: [/etc/catalogsync/cosign.pub]
  - name: releases
    prefix: registry.example.test/releases
    keyless:
      trustedRoot: /etc/catalogsync/trusted_root.json
      identity: release-bot@acme.example
      issuerRegexp: ^https://token\.actions\.example$
catalogs:
  - name: operators
    image: registry.example.test/acme/operators:v4.21
    signature: {rule: releases}
  - name: plain
    image: registry.example.test/acme/plain:v1
`
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	s := c.signatures()
	if len(s.rules) != 2 || s.rules[0].KeyFiles[0] != "/etc/catalogsync/cosign.pub" || s.rules[1].Keyless == nil ||
		s.rules[1].Keyless.IssuerRegexp != `^https://token\.actions\.example$` || s.rules[1].Name != "releases" {
		t.Fatalf("rules %+v", s.rules)
	}
	if len(s.catalogs) != 1 || s.catalogs["operators"].Rule != "releases" {
		t.Fatalf("catalogs %+v", s.catalogs)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(cfg, "identity:", "identiy:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), "identiy") {
		t.Fatalf("misspelt key: %v", err)
	}
	// A catalog's own requirement on an image whose signatures cannot be
	// read is refused at load, saying why.
	bad := "storage: {dir: /tmp/x}\ncatalogs:\n- name: archive\n  image: ocifile:///srv/catalog.tar:v1\n  signature: {keys: [/etc/catalogsync/cosign.pub]}\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), "signatures of ocifile:// images cannot be read") {
		t.Fatalf("unverifiable image: %v", err)
	}
}
