package storage

import "strings"

// ValidPrefix reports whether prefix may be passed to List. A prefix is a
// plain string prefix of keys, as in S3: "a/b" matches "a/b", "a/b/c" and
// "a/bc". So only its complete segments (those followed by a slash) must be
// valid key segments; the last, partial segment may be anything a key
// segment could start with, including "" and ".".
func ValidPrefix(prefix string) bool {
	if prefix == "" {
		return true
	}
	if strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, "\\\x00") {
		return false
	}
	parts := strings.Split(prefix, "/")
	for _, part := range parts[:len(parts)-1] {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}
