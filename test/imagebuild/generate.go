package imagebuild

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sync/errgroup"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// GenerateCopies writes a scaled File-Based Catalog to dstDir: every package
// of the catalog in srcConfigsDir, copies times, renamed "<pkg>-copy<N>"
// (N from 1). Copy N of a source file rel goes to dstDir/copy<N>/rel.
//
// Renamed consistently: the olm.package name, the package field of channels,
// bundles, deprecations (any schema), and the packageName of olm.package and
// olm.package.required bundle properties. Bundle names stay: they need to be
// unique only within their package, and channel entries keep pointing at
// them. Files hidden by .indexignore are left out. Documents are streamed
// one at a time; with the 33-package community-v4.21 catalog, 16 copies
// make about 220 MB and 528 packages.
func GenerateCopies(srcConfigsDir, dstDir string, copies int) error {
	if copies < 1 {
		return fmt.Errorf("imagebuild: copies must be at least 1, not %d", copies)
	}
	files, err := catalogFiles(srcConfigsDir)
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("imagebuild: no catalog files in %s", srcConfigsDir)
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, rel := range files {
		g.Go(func() error {
			if err := copyCatalogFile(srcConfigsDir, dstDir, rel, copies); err != nil {
				return fmt.Errorf("imagebuild: %s: %w", rel, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// catalogFiles lists the YAML and JSON files under root that no .indexignore
// hides, as slash-separated relative paths.
func catalogFiles(root string) ([]string, error) {
	var patterns []gitignore.Pattern
	var files []string
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if de.Type().IsRegular() && de.Name() == ".indexignore" {
			ps, err := readIgnore(p, rel)
			patterns = append(patterns, ps...)
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if de.Type().IsRegular() {
				files = append(files, rel)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Patterns apply after the walk: a folder's .indexignore may come after
	// files of deeper folders in walk order.
	m := gitignore.NewMatcher(patterns)
	kept := files[:0]
	for _, f := range files {
		if !m.Match(strings.Split(f, "/"), false) {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// readIgnore parses an .indexignore (gitignore syntax) whose patterns apply
// below its own folder.
func readIgnore(p, rel string) ([]gitignore.Pattern, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var domain []string
	if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
		domain = strings.Split(d, "/")
	}
	var ps []gitignore.Pattern
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, nil
}

// copyCatalogFile decodes rel's documents one by one and writes each, renamed,
// to every copy. JSON sources give JSON copies, YAML sources YAML.
func copyCatalogFile(srcDir, dstDir, rel string, copies int) error {
	in, err := os.Open(filepath.Join(srcDir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	defer in.Close()
	asJSON := strings.EqualFold(filepath.Ext(rel), ".json")

	outs := make([]*bufio.Writer, copies)
	files := make([]*os.File, copies)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for i := range copies {
		p := filepath.Join(dstDir, fmt.Sprintf("copy%d", i+1), filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if files[i], err = os.Create(p); err != nil {
			return err
		}
		outs[i] = bufio.NewWriterSize(files[i], 256<<10)
	}

	dec := k8syaml.NewYAMLOrJSONDecoder(in, 4096)
	for {
		// Raw values keep everything but the renamed fields untouched.
		var doc map[string]json.RawMessage
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if len(doc) == 0 {
			continue // an empty YAML document
		}
		for i := range copies {
			renamed, err := renameDoc(doc, fmt.Sprintf("-copy%d", i+1))
			if err != nil {
				return err
			}
			b, err := json.Marshal(renamed)
			if err != nil {
				return err
			}
			if asJSON {
				b = append(b, '\n')
			} else {
				if b, err = yaml.JSONToYAML(b); err != nil {
					return err
				}
				_, _ = outs[i].WriteString("---\n") // bufio keeps the error for Flush
			}
			if _, err := outs[i].Write(b); err != nil {
				return err
			}
		}
	}
	for i := range copies {
		if err := outs[i].Flush(); err != nil {
			return err
		}
		if err := files[i].Close(); err != nil {
			return err
		}
		files[i] = nil
	}
	return nil
}

// renameDoc returns a shallow copy of doc with its package references renamed.
func renameDoc(doc map[string]json.RawMessage, suffix string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	var schema string
	_ = json.Unmarshal(doc["schema"], &schema)
	var err error
	if schema == "olm.package" {
		if out["name"], err = renameString(doc["name"], suffix); err != nil {
			return nil, fmt.Errorf("olm.package name: %w", err)
		}
	}
	if raw, ok := doc["package"]; ok {
		if out["package"], err = renameString(raw, suffix); err != nil {
			return nil, fmt.Errorf("%s package: %w", schema, err)
		}
	}
	if raw, ok := doc["properties"]; ok && schema == "olm.bundle" {
		if out["properties"], err = renameProperties(raw, suffix); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func renameString(raw json.RawMessage, suffix string) (json.RawMessage, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s == "" {
		return raw, nil
	}
	return json.Marshal(s + suffix)
}

// renameProperties renames packageName in olm.package and
// olm.package.required properties; other properties stay raw.
func renameProperties(raw json.RawMessage, suffix string) (json.RawMessage, error) {
	var props []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, fmt.Errorf("bundle properties: %w", err)
	}
	changed := false
	for i, p := range props {
		var typ string
		_ = json.Unmarshal(p["type"], &typ)
		if typ != "olm.package" && typ != "olm.package.required" {
			continue
		}
		var value map[string]json.RawMessage
		if err := json.Unmarshal(p["value"], &value); err != nil {
			return nil, fmt.Errorf("%s property: %w", typ, err)
		}
		name, err := renameString(value["packageName"], suffix)
		if err != nil {
			return nil, fmt.Errorf("%s packageName: %w", typ, err)
		}
		value["packageName"] = name
		v, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		q := make(map[string]json.RawMessage, len(p))
		for k, x := range p {
			q[k] = x
		}
		q["value"] = v
		props[i] = q
		changed = true
	}
	if !changed {
		return raw, nil
	}
	return json.Marshal(props)
}
