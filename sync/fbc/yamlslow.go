package fbc

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// slowYAML decodes a document with yaml.v2, the parser operator-registry
// uses through sigs.k8s.io/yaml, and converts the result straight into the
// arena, applying what the YAML -> JSON text -> map round trip would do:
// non-string keys become strings, integers become float64, NaN and Inf are
// errors, invalid UTF-8 becomes U+FFFD.
func (a *arena) slowYAML(doc []byte) (node, error) {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return node{}, err
	}
	return a.fromYAML(v, 0)
}

type yamlEntry struct {
	key  string
	rank int // which kind of YAML key produced it
	val  any
}

func (a *arena) fromYAML(v any, depth int) (node, error) {
	switch v := v.(type) {
	case nil:
		return node{kind: kNull}, nil
	case bool:
		if v {
			return node{kind: kTrue}, nil
		}
		return node{kind: kFalse}, nil
	case string:
		return a.str([]byte(v)), nil
	case int:
		return node{kind: kNum, f: float64(v)}, nil
	case int64:
		return node{kind: kNum, f: float64(v)}, nil
	case uint64:
		return node{kind: kNum, f: float64(v)}, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return node{}, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
		}
		return node{kind: kNum, f: v}, nil
	case []any:
		return a.fromYAMLSeq(v, depth)
	case map[any]any:
		return a.fromYAMLMap(v, depth)
	default:
		// Not produced by yaml.v2 for an interface{} target; take the
		// reference round trip to be safe.
		b, err := json.Marshal(v)
		if err != nil {
			return node{}, err
		}
		var j any
		if err := json.Unmarshal(b, &j); err != nil {
			return node{}, err
		}
		return a.fromJSONValue(j, depth)
	}
}

func (a *arena) fromYAMLSeq(v []any, depth int) (node, error) {
	if depth+1 > maxDepth {
		return node{}, errDepth
	}
	m := a.mark()
	for _, e := range v {
		n, err := a.fromYAML(e, depth+1)
		if err != nil {
			return node{}, err
		}
		a.push(n)
	}
	return a.endArr(m), nil
}

func (a *arena) fromYAMLMap(v map[any]any, depth int) (node, error) {
	if depth+1 > maxDepth {
		return node{}, errDepth
	}
	entries, err := a.yamlEntries(v)
	if err != nil {
		return node{}, err
	}
	m := a.mark()
	for _, e := range entries {
		n, err := a.fromYAML(e.val, depth+1)
		if err != nil {
			return node{}, err
		}
		a.push(a.str([]byte(e.key)))
		a.push(n)
	}
	return a.endObj(m), nil
}

// yamlEntries returns a mapping's entries under their JSON names, in the
// order the JSON round trip would keep them.
func (a *arena) yamlEntries(v map[any]any) ([]yamlEntry, error) {
	entries := make([]yamlEntry, 0, len(v))
	for k, e := range v {
		ks, rank, err := yamlKey(k, e)
		if err != nil {
			return nil, err
		}
		entries = append(entries, yamlEntry{ks, rank, e})
	}
	// json.Marshal writes keys in sorted order and json.Unmarshal keeps
	// the last duplicate, so order by key first.
	slices.SortFunc(entries, func(x, y yamlEntry) int {
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
		return x.rank - y.rank
	})
	for i := 1; i < len(entries); i++ {
		if entries[i].key == entries[i-1].key {
			// Two distinct YAML keys with one JSON name: which one
			// operator-registry keeps depends on map iteration order.
			a.ambiguous = true
		}
	}
	return entries, nil
}

// yamlKey stringifies a YAML map key as sigs.k8s.io/yaml does.
func yamlKey(k, v any) (string, int, error) {
	switch k := k.(type) {
	case string:
		return k, 0, nil
	case int:
		return strconv.Itoa(k), 1, nil
	case int64:
		return strconv.FormatInt(k, 10), 2, nil
	case float64:
		s := strconv.FormatFloat(k, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, 3, nil
	case bool:
		if k {
			return "true", 4, nil
		}
		return "false", 4, nil
	}
	return "", 0, fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
}

func (a *arena) fromJSONValue(v any, depth int) (node, error) {
	switch v := v.(type) {
	case map[string]any:
		if depth+1 > maxDepth {
			return node{}, errDepth
		}
		m := a.mark()
		for k, e := range v {
			n, err := a.fromJSONValue(e, depth+1)
			if err != nil {
				return node{}, err
			}
			a.push(a.str([]byte(k)))
			a.push(n)
		}
		return a.endObj(m), nil
	default:
		return a.fromYAML(v, depth)
	}
}
