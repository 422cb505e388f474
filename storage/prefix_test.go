package storage

import "testing"

func TestValidPrefix(t *testing.T) {
	for prefix, want := range map[string]bool{
		"":          true,
		"a":         true,
		"a/":        true,
		"a/b":       true,
		"a/b/":      true,
		"a/.":       true, // partial: matches "a/.hidden"
		"a/..":      true, // partial: matches "a/..x"
		"..x/":      true,
		"/":         false,
		"/a":        false,
		"a//":       false,
		"a//b":      false,
		"./a":       false,
		"../a":      false,
		"a/../b":    false,
		"a\\b":      false,
		"a\x00":     false,
		"a/./":      false,
		"catalogs/": true,
	} {
		if got := ValidPrefix(prefix); got != want {
			t.Errorf("ValidPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"a":       true,
		"a/b":     true,
		"a/.b":    true,
		"a/..b":   true,
		"":        false,
		"/a":      false,
		"a/":      false,
		"a//b":    false,
		".":       false,
		"..":      false,
		"a/../b":  false,
		"a\\b":    false,
		"a\x00b":  false,
		"./a":     false,
		"a/./b":   false,
		"a/b/..":  false,
		"x y/ü+=": true,
	} {
		if got := ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}
