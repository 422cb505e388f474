package catalog

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Store layout. Everything of a catalog lives under catalogs/<name>/, its
// content under a directory per image digest, so content is immutable once
// complete and a new version never disturbs readers of the old one.
const (
	keyRoot     = "catalogs/"
	contentFile = "catalog.jsonl"
	indexFile   = "index"
	metaFile    = "meta.json"
	currentFile = "current"
	pollFile    = "lastpoll"
)

// dns1123Subdomain is the Kubernetes object name rule (ClusterCatalog names
// follow it); it admits no "/", "..", upper case or empty segments, so a
// valid name is always a single safe key segment.
var dns1123Subdomain = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
})

// ValidName reports whether name is a DNS-1123 subdomain of at most 253
// characters.
func ValidName(name string) bool {
	return len(name) <= 253 && dns1123Subdomain().MatchString(name)
}

func checkName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("catalog: %q: %w", name, ErrInvalidName)
	}
	return nil
}

// digestHexLen are the OCI-registered digest algorithms and their hex
// lengths.
var digestHexLen = map[string]int{"sha256": 64, "sha512": 128}

// ValidDigest reports whether d is "<algorithm>:<lower-case hex>" with a
// registered algorithm and the hex length that algorithm produces.
func ValidDigest(d string) bool {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		return false
	}
	n, known := digestHexLen[alg]
	if !known || len(hex) != n {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func checkDigest(d string) error {
	if !ValidDigest(d) {
		return fmt.Errorf("catalog: digest %q: %w", d, ErrInvalidDigest)
	}
	return nil
}

func catalogPrefix(name string) string { return keyRoot + name + "/" }

// contentPrefix is the digest's directory, "sha256-<hex>" since ":" is not
// safe in every backend's names. name and digest must be validated.
func contentPrefix(name, digest string) string {
	return catalogPrefix(name) + digestDir(digest) + "/"
}

// digestDir is the directory name of a validated digest.
func digestDir(digest string) string { return strings.Replace(digest, ":", "-", 1) }

// ContentKey returns the key of the catalog.jsonl of name at digest, and
// so of its directory. Content sharing lines with earlier content (format
// 2) has no catalog.jsonl of its own: read content through
// Catalog.OpenRange.
func ContentKey(name, digest string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := checkDigest(digest); err != nil {
		return "", err
	}
	return contentPrefix(name, digest) + contentFile, nil
}

// PointerKey returns the key of the catalog's current pointer, for readers
// that check it cheaply (a Stat of its ETag) before opening the catalog.
// name must be valid (ValidName).
func PointerKey(name string) string { return catalogPrefix(name) + currentFile }
