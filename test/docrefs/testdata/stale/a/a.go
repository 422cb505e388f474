// Package a holds references, good and stale, for the checker's own test:
// [Here], [Here.Name], [T.M], [strings.Builder.Len] and [io] resolve.
package a

import "strings"

// Here is named by the doc links above; [Gone] and [Here.Gone] are not.
type Here struct {
	Name string
	b    strings.Builder
}

// T has a method.
type T int

// M is a method; [strings.NoSuch] names nothing, [nosuch.Thing] is no
// link (no import is named nosuch), and strings.Nope in plain text names
// nothing either. strings.Builder does; so does a.Here, and io/fs.WalkDir.
func (T) M() {}
