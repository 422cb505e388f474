package sigverify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// encoding/json takes a key's last occurrence and matches keys whatever
// their case; protojson, which sigstore's and in-toto's readers use,
// refuses a repeated key and reads keys as spelled. checkKeys refuses, in
// JSON that has already decoded, the keys the two would read apart.

// keyRule checks key, found at where (a path of keys, "[]" for array
// elements), given the keys before it in its object.
type keyRule func(where, key string, seen map[string]bool) error

func checkKeys(b []byte, rule keyRule) error {
	return walkKeys(json.NewDecoder(bytes.NewReader(b)), "", rule)
}

// walkKeys reads one value.
func walkKeys(dec *json.Decoder, where string, rule keyRule) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := tok.(string)
			if err := rule(where, k, seen); err != nil {
				return err
			}
			seen[k] = true
			if err := walkKeys(dec, where+"/"+k, rule); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkKeys(dec, where+"[]", rule); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// rootKey: a trusted root's keys are lowerCamelCase ASCII, once per
// object in any case: a proto field name ("valid_for") or a repeat could
// leave a validity unread, and a key trusted for ever.
func rootKey(_, k string, seen map[string]bool) error {
	for s := range seen {
		if strings.EqualFold(s, k) {
			return fmt.Errorf("field %q: repeated", k)
		}
	}
	if !lowerCamel(k) {
		return fmt.Errorf("field %q: not in lowerCamelCase as protojson writes it", k)
	}
	return nil
}

func lowerCamel(k string) bool {
	for i, c := range k {
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')) {
			return false
		}
	}
	return k != ""
}

// statementKey: an in-toto statement's keys appear once per object, and
// the subjects and their digests only so spelled, as protojson reads them.
func statementKey(where, k string, seen map[string]bool) error {
	switch {
	case seen[k]:
		return fmt.Errorf("in-toto statement field %q: repeated", k)
	case where == "" && k != "subject" && strings.EqualFold(k, "subject"),
		where == "/subject[]" && k != "digest" && strings.EqualFold(k, "digest"):
		return fmt.Errorf("in-toto statement field %q: not as protojson reads it", k)
	}
	return nil
}
