package fbc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/text/cases"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// refMeta mirrors operator-registry's declcfg.Meta decoding: the reference
// path that the fast path must match byte for byte.
type refMeta struct {
	schema, pkg, name string
	blob              []byte
}

func (m *refMeta) UnmarshalJSON(blob []byte) error {
	blobMap := map[string]any{}
	if err := json.Unmarshal(blob, &blobMap); err != nil {
		return err
	}
	if err := refMetaKeys(blobMap, m); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(blobMap); err != nil {
		return err
	}
	m.blob = buf.Bytes()
	return nil
}

func refMetaKeys(blobMap map[string]any, m *refMeta) error {
	folder := cases.Fold()
	seen := map[string][]string{}
	for key := range blobMap {
		f := folder.String(key)
		seen[f] = append(seen[f], key)
	}
	for f, keys := range seen {
		if len(keys) != 1 {
			return fmt.Errorf("duplicate keys for key %q: %v", f, keys)
		}
	}
	for _, field := range []struct {
		key string
		dst *string
	}{{"schema", &m.schema}, {"package", &m.pkg}, {"name", &m.name}} {
		keys, ok := seen[folder.String(field.key)]
		if !ok {
			continue
		}
		v, ok := blobMap[keys[0]].(string)
		if !ok {
			return fmt.Errorf("expected value for key %q to be a string, got %t: %v", keys[0], blobMap[keys[0]], blobMap[keys[0]])
		}
		*field.dst = v
	}
	return nil
}

// parseReference is the straightforward path: apimachinery's
// YAMLOrJSONDecoder and the Meta round trip, exactly as operator-registry
// reads a file. It is slow and is kept as the oracle for the fast path.
func parseReference(r io.Reader, fn func(Object) error) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for i := 0; ; i++ {
		var m refMeta
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%w: document %d: %v", ErrInvalid, i, err)
		}
		if err := fn(Object{Schema: m.schema, Package: m.pkg, Name: m.name, Blob: m.blob}); err != nil {
			return err
		}
	}
}
