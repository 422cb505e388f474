package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Change is a realistic edit of one package's catalog file, as a new
// release of an operator makes it.
type Change int

const (
	// AddBundle appends a new bundle (the next patch version of the
	// default channel's head) and makes it the channel's new head.
	AddBundle Change = iota
	// TouchBundle changes one bundle's createdAt annotation (its
	// olm.csv.metadata property), as a rebuilt bundle does.
	TouchBundle
)

// ChangePackage writes to dst the catalog file src, holding the documents
// of one package, with one change. seq makes the change's new values
// (image digest, timestamp, which bundle is touched) differ between calls.
// It returns what changed, e.g. "kepler-operator: added bundle X".
//
// The file is written like GenerateCopies writes it (YAML documents or
// JSON, by src's extension); every document but the changed ones has the
// same content as before, the whole file is in memory.
func ChangePackage(src, dst string, change Change, seq int) (string, error) {
	docs, err := readDocs(src)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %s: %w", src, err)
	}
	var what string
	switch change {
	case AddBundle:
		docs, what, err = addBundle(docs, seq)
	case TouchBundle:
		what, err = touchBundle(docs, seq)
	default:
		err = fmt.Errorf("unknown change %d", change)
	}
	if err != nil {
		return "", fmt.Errorf("imagebuild: %s: %w", src, err)
	}
	if err := writeDocs(dst, docs, strings.EqualFold(filepath.Ext(src), ".json")); err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	return what, nil
}

type doc = map[string]json.RawMessage

func readDocs(p string) ([]doc, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []doc
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var d doc
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
}

func writeDocs(p string, docs []doc, asJSON bool) error {
	var out []byte
	for _, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if asJSON {
			out = append(append(out, b...), '\n')
			continue
		}
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		out = append(append(out, "---\n"...), b...)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, out, 0o644)
}

func str(d doc, key string) string {
	var s string
	_ = json.Unmarshal(d[key], &s)
	return s
}

// thePackage returns the file's olm.package document.
func thePackage(docs []doc) (doc, error) {
	for _, d := range docs {
		if str(d, "schema") == "olm.package" {
			return d, nil
		}
	}
	return nil, errors.New("no olm.package document")
}

type entry struct {
	Name     string   `json:"name"`
	Replaces string   `json:"replaces,omitempty"`
	Skips    []string `json:"skips,omitempty"`
}

// addBundle copies the default channel's head bundle as the next patch
// version, replacing the head.
func addBundle(docs []doc, seq int) ([]doc, string, error) {
	pkgDoc, err := thePackage(docs)
	if err != nil {
		return nil, "", err
	}
	pkg := str(pkgDoc, "name")
	ch := channelOf(docs, pkg, str(pkgDoc, "defaultChannel"))
	if ch == nil {
		return nil, "", fmt.Errorf("package %s has no channel", pkg)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(ch["entries"], &raw); err != nil {
		return nil, "", fmt.Errorf("channel entries: %w", err)
	}
	head, err := channelHead(raw)
	if err != nil {
		return nil, "", fmt.Errorf("channel %s: %w", str(ch, "name"), err)
	}
	at := -1
	names, versions := map[string]bool{}, map[string]bool{}
	for i, d := range docs {
		if str(d, "schema") != "olm.bundle" || str(d, "package") != pkg {
			continue
		}
		names[str(d, "name")] = true
		versions[bundleVersion(d)] = true
		if str(d, "name") == head {
			at = i
		}
	}
	if at < 0 {
		return nil, "", fmt.Errorf("head %s has no bundle document", head)
	}
	nb, name, err := nextBundle(docs[at], names, versions, seq)
	if err != nil {
		return nil, "", err
	}
	e, _ := json.Marshal(entry{Name: name, Replaces: head})
	entries, err := json.Marshal(append(raw, e))
	if err != nil {
		return nil, "", err
	}
	ch["entries"] = entries
	docs = append(docs[:at+1], append([]doc{nb}, docs[at+1:]...)...)
	return docs, fmt.Sprintf("%s: added bundle %s to channel %s", pkg, name, str(ch, "name")), nil
}

// channelOf returns the package's channel called name, else its first.
func channelOf(docs []doc, pkg, name string) doc {
	var first doc
	for _, d := range docs {
		if str(d, "schema") != "olm.channel" || str(d, "package") != pkg {
			continue
		}
		if str(d, "name") == name {
			return d
		}
		if first == nil {
			first = d
		}
	}
	return first
}

// channelHead is the first entry no other entry replaces or skips.
func channelHead(raw []json.RawMessage) (string, error) {
	es := make([]entry, len(raw))
	replaced := map[string]bool{}
	for i, r := range raw {
		if err := json.Unmarshal(r, &es[i]); err != nil {
			return "", err
		}
		replaced[es[i].Replaces] = true
		for _, s := range es[i].Skips {
			replaced[s] = true
		}
	}
	for _, e := range es {
		if !replaced[e.Name] {
			return e.Name, nil
		}
	}
	return "", errors.New("no head")
}

func bundleVersion(d doc) string {
	var props []struct {
		Type  string `json:"type"`
		Value struct {
			Version string `json:"version"`
		} `json:"value"`
	}
	_ = json.Unmarshal(d["properties"], &props)
	for _, p := range props {
		if p.Type == "olm.package" {
			return p.Value.Version
		}
	}
	return ""
}

// nextBundle copies head as the next free patch version, with its name,
// olm.package version and image (a new digest, also in relatedImages)
// changed to match.
func nextBundle(head doc, names, versions map[string]bool, seq int) (doc, string, error) {
	old := bundleVersion(head)
	v, err := semver.ParseTolerant(old)
	if err != nil {
		return nil, "", fmt.Errorf("bundle %s version %q: %w", str(head, "name"), old, err)
	}
	v.Pre, v.Build = nil, nil
	v.Patch++
	for versions[v.String()] {
		v.Patch++
	}
	headName := str(head, "name")
	name := strings.Replace(headName, old, v.String(), 1)
	if name == headName {
		name = headName + "-" + v.String()
	}
	for names[name] {
		name += "-next"
	}
	nb := make(doc, len(head))
	for k, x := range head {
		nb[k] = x
	}
	nb["name"], _ = json.Marshal(name)
	props, err := setPackageVersion(head["properties"], v.String())
	if err != nil {
		return nil, "", err
	}
	nb["properties"] = props
	oldImage := str(head, "image")
	if oldImage != "" {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s %d", name, seq)))
		img := imageRepo(oldImage) + "@sha256:" + hex.EncodeToString(sum[:])
		nb["image"], _ = json.Marshal(img)
		if ri, ok := head["relatedImages"]; ok {
			nb["relatedImages"] = json.RawMessage(strings.ReplaceAll(string(ri), `"`+oldImage+`"`, `"`+img+`"`))
		}
	}
	return nb, name, nil
}

// imageRepo strips an image reference's digest or tag.
func imageRepo(img string) string {
	if i := strings.IndexByte(img, '@'); i >= 0 {
		return img[:i]
	}
	if i := strings.LastIndexByte(img, ':'); i > strings.LastIndexByte(img, '/') {
		return img[:i]
	}
	return img
}

// setPackageVersion sets the version of the olm.package property.
func setPackageVersion(raw json.RawMessage, version string) (json.RawMessage, error) {
	return editProperty(raw, "olm.package", func(v map[string]json.RawMessage) error {
		v["version"], _ = json.Marshal(version)
		return nil
	})
}

// editProperty decodes the value of the first property of type typ, lets
// edit change it, and returns the properties with it re-encoded; the other
// properties stay raw. It fails when there is no such property.
func editProperty(raw json.RawMessage, typ string, edit func(map[string]json.RawMessage) error) (json.RawMessage, error) {
	var props []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, fmt.Errorf("bundle properties: %w", err)
	}
	for i, p := range props {
		var t string
		_ = json.Unmarshal(p["type"], &t)
		if t != typ {
			continue
		}
		var value map[string]json.RawMessage
		if err := json.Unmarshal(p["value"], &value); err != nil {
			return nil, fmt.Errorf("%s property: %w", typ, err)
		}
		if err := edit(value); err != nil {
			return nil, err
		}
		q := make(map[string]json.RawMessage, len(p))
		for k, x := range p {
			q[k] = x
		}
		var err error
		if q["value"], err = json.Marshal(value); err != nil {
			return nil, err
		}
		props[i] = q
		return json.Marshal(props)
	}
	return nil, fmt.Errorf("no %s property", typ)
}

// touchBundle sets a new createdAt annotation on the package's bundle
// number seq (modulo their count) that has an olm.csv.metadata property.
func touchBundle(docs []doc, seq int) (string, error) {
	pkgDoc, err := thePackage(docs)
	if err != nil {
		return "", err
	}
	pkg := str(pkgDoc, "name")
	var bundles []doc
	for _, d := range docs {
		if str(d, "schema") == "olm.bundle" && str(d, "package") == pkg {
			bundles = append(bundles, d)
		}
	}
	created := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Minute).Format(time.RFC3339)
	for i := range bundles {
		b := bundles[(seq+i)%len(bundles)]
		props, err := editProperty(b["properties"], "olm.csv.metadata", func(v map[string]json.RawMessage) error {
			ann := map[string]json.RawMessage{}
			if a, ok := v["annotations"]; ok {
				if err := json.Unmarshal(a, &ann); err != nil {
					return fmt.Errorf("annotations: %w", err)
				}
			}
			ann["createdAt"], _ = json.Marshal(created)
			var err error
			v["annotations"], err = json.Marshal(ann)
			return err
		})
		if err != nil {
			continue // no olm.csv.metadata: try the next bundle
		}
		b["properties"] = props
		return fmt.Sprintf("%s: bundle %s createdAt %s", pkg, str(b, "name"), created), nil
	}
	return "", fmt.Errorf("package %s has no bundle with an olm.csv.metadata property", pkg)
}
