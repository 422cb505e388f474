package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The file --config names is read once per start: the settings it holds
// (storage.dir, platform) and the catalogs come from the same read, so an
// edit in between cannot mix two versions.
func TestConfigFileIsReadOnce(t *testing.T) {
	unsetEnv(t, "CATALOGSYNC_CONFIG", "CATALOGSYNC_STORE", "CATALOGSYNC_PLATFORM", "CATALOGSYNC_S3_BUCKET")
	path := fileWith(t, "storage:\n  dir: /srv/catalogs\nplatform: linux/arm64")
	if err := os.WriteFile(path, []byte(`storage:
  dir: /srv/catalogs
platform: linux/arm64
catalogs:
- name: tiny
  image: registry.example.test/acme/tiny:v1
  pollIntervalMinutes: 10
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, from, err := parseArgs(t, "serve", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.Store != "/srv/catalogs" || c.Serve.Platform != "linux/arm64" || from["store"] != "file key storage.dir" {
		t.Fatalf("store %q platform %q (from %q): the file's settings were not read", c.Serve.Store, c.Serve.Platform, from["store"])
	}
	if err := os.WriteFile(path, []byte("catalogs: [{name: other, image: registry.example.test/acme/other:v1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.Serve.load()
	if err != nil {
		t.Fatal(err)
	}
	cats := cfg.catalogs()
	if len(cats) != 1 || cats[0].Name != "tiny" || cats[0].PollInterval != 10*time.Minute || cats[0].Image.Registry() != "registry.example.test" {
		t.Fatalf("catalogs %+v: the file was read again", cats)
	}
}

// Every file key a setting declares (file:"...") names a field of Config:
// a key the strict decode accepts is one the settings read.
func TestFileKeysAreConfigFields(t *testing.T) {
	var walk func(t reflect.Type)
	n := 0
	walk = func(typ reflect.Type) {
		for _, f := range reflect.VisibleFields(typ) {
			if key := f.Tag.Get("file"); key != "" {
				n++
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s: %v", f.Name, r)
						}
					}()
					fileSetting(Config{}, key)
				}()
			}
			if f.Type.Kind() == reflect.Struct && f.IsExported() {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[commands]())
	if n == 0 {
		t.Fatal("no setting declares a file key")
	}
}

// The environment is read where the settings are declared, and only
// there: a variable read elsewhere would be a setting the help and the
// settings table do not show.
func TestEnvironmentIsReadInSettingsOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "settings.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && strings.Contains("Getenv LookupEnv Environ", sel.Sel.Name) {
				t.Errorf("%s: os.%s outside settings.go: declare the setting there", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	for _, e := range envOnly {
		if envValue(e.Env) != os.Getenv(e.Env) {
			t.Errorf("%s: envValue differs from the environment", e.Env)
		}
	}
}
