package ui

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/go-json-experiment/json/jsontext"
)

// The File-Based Catalog objects the pages show, with only the fields they
// use. Everything in them is untrusted: templates escape it, and icons are
// served apart (see icon.go).

type fbcPackage struct {
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Description    string `json:"description"`
	Icon           *struct {
		Data      string `json:"base64data"`
		MediaType string `json:"mediatype"`
	} `json:"icon"`
}

type fbcEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

type fbcChannel struct {
	Package string     `json:"package"`
	Name    string     `json:"name"`
	Entries []fbcEntry `json:"entries"`
}

type fbcProperty struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type fbcBundle struct {
	Package       string        `json:"package"`
	Name          string        `json:"name"`
	Image         string        `json:"image"`
	Properties    []fbcProperty `json:"properties"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages"`
}

type fbcDeprecation struct {
	Package string `json:"package"`
	Entries []struct {
		Reference struct {
			Schema string `json:"schema"`
			Name   string `json:"name"`
		} `json:"reference"`
		Message string `json:"message"`
	} `json:"entries"`
}

// deprecations of one package, by what they name.
type deprecations struct {
	pkg      string // message, "" when the package is not deprecated
	channels map[string]string
	bundles  map[string]string
}

func (d *deprecations) add(x fbcDeprecation) {
	for _, e := range x.Entries {
		msg := e.Message
		if msg == "" {
			msg = "deprecated"
		}
		switch e.Reference.Schema {
		case "olm.package":
			d.pkg = msg
		case "olm.channel":
			d.channels[e.Reference.Name] = msg
		case "olm.bundle":
			d.bundles[e.Reference.Name] = msg
		}
	}
}

func newDeprecations() *deprecations {
	return &deprecations{channels: map[string]string{}, bundles: map[string]string{}}
}

// eachLine calls fn with each "\n"-terminated line of b.
func eachLine(b []byte, fn func([]byte) error) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		if err := fn(b[:i+1]); err != nil {
			return err
		}
		b = b[i+1:]
	}
	return nil
}

// propertyValue finds the value of the first property of type typ in a
// bundle's line without decoding the rest of it. Stored lines are compact
// JSON with sorted keys, so a property is {"type":T,"value":V}, and the
// marker cannot occur inside a string (its quotes would be escaped).
func propertyValue(line []byte, typ string) json.RawMessage {
	marker := `{"type":` + quote(typ) + `,"value":`
	i := bytes.Index(line, []byte(marker))
	if i < 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line[i+len(marker):]))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// bundleVersion reads the version of a bundle line's olm.package property.
func bundleVersion(line []byte) string {
	var v struct {
		Version string `json:"version"`
	}
	if raw := propertyValue(line, "olm.package"); raw != nil {
		_ = json.Unmarshal(raw, &v) // a malformed value shows empty
	}
	return v.Version
}

// csvMetadata is the olm.csv.metadata property, the parts shown.
type csvMetadata struct {
	DisplayName  string                `json:"displayName"`
	Description  string                `json:"description"`
	Provider     struct{ Name string } `json:"provider"`
	Maturity     string                `json:"maturity"`
	Keywords     []string              `json:"keywords"`
	Capabilities string                `json:"-"`
	Annotations  map[string]string     `json:"annotations"`
	MinKube      string                `json:"minKubeVersion"`
	Links        []struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"links"`
	Maintainers []struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"maintainers"`
}

func parseCSVMetadata(line []byte) (csvMetadata, bool) {
	var m csvMetadata
	raw := propertyValue(line, "olm.csv.metadata")
	if raw == nil || json.Unmarshal(raw, &m) != nil {
		return csvMetadata{}, false
	}
	m.Capabilities = m.Annotations["capabilities"]
	return m, true
}

// csvSummary reads only the display name and description of a bundle
// line's olm.csv.metadata. Some CSVs carry a megabyte of annotations
// (alm-examples) before them: a streaming decoder skips those without
// decoding them, and stops at displayName (keys are sorted).
func csvSummary(line []byte) (m struct{ DisplayName, Description string }, ok bool) {
	marker := []byte(`{"type":"olm.csv.metadata","value":`)
	i := bytes.Index(line, marker)
	if i < 0 {
		return m, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(line[i+len(marker):]), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return m, false
	}
	for dec.PeekKind() == '"' {
		key, err := dec.ReadToken()
		if err != nil {
			return m, false
		}
		switch k := key.String(); k {
		case "description", "displayName":
			v, err := dec.ReadToken()
			if err != nil {
				return m, false
			}
			if k == "description" {
				m.Description = v.String()
			} else {
				m.DisplayName = v.String()
				return m, true
			}
		default:
			if dec.SkipValue() != nil {
				return m, false
			}
		}
	}
	return m, true
}

// parseVersion is semver, tolerating a leading "v"; ok is false for what
// does not parse, which sorts last.
func parseVersion(s string) (semver.Version, bool) {
	v, err := semver.Parse(strings.TrimPrefix(s, "v"))
	return v, err == nil
}

// newer reports whether version a sorts after b (unparsable ones first).
func newer(a, b string) bool {
	va, oka := parseVersion(a)
	vb, okb := parseVersion(b)
	switch {
	case oka && okb:
		return va.GT(vb)
	case oka != okb:
		return oka
	}
	return a > b
}

// shorten cuts s to at most n bytes at a rune boundary, marking the cut:
// a catalog may carry megabyte names and descriptions.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
