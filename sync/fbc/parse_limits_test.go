package fbc

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// endless is `{"schema":"x","pad":"zzzz…` without an end.
type endless struct{ head string }

func (e *endless) Read(b []byte) (int, error) {
	if e.head != "" {
		n := copy(b, e.head)
		e.head = e.head[n:]
		return n, nil
	}
	for i := range b {
		b[i] = 'z'
	}
	return len(b), nil
}

// One document may not grow past MaxDocumentBytes, however much input
// follows: the parse stops there with an invalid-catalog error.
func TestDocumentCap(t *testing.T) {
	t.Parallel()
	for _, head := range []string{`{"schema":"x","pad":"`, "schema: x\npad: "} {
		t.Run(head[:1], func(t *testing.T) {
			t.Parallel()
			err := Parse(&endless{head: head}, func(Object) error { return nil })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
				t.Fatalf("%q…: %v", head, err)
			}
		})
	}
	// A whole document over the cap, from a reader that fills every
	// buffer it is given (a file): refused too, not only a stream's.
	t.Run("whole document from a file-like reader", func(t *testing.T) {
		t.Parallel()
		doc := `{"schema":"x","pad":"` + strings.Repeat("z", MaxDocumentBytes+MaxDocumentBytes/4) + `"}` + "\n"
		err := Parse(strings.NewReader(doc), func(Object) error { return nil })
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("a %d-byte document: %v", len(doc), err)
		}
	})
	// Documents under the cap, one after another, are fine whatever the
	// total.
	t.Run("many under the cap", func(t *testing.T) {
		t.Parallel()
		doc := `{"schema":"x","name":"` + strings.Repeat("y", 1<<20) + `"}` + "\n"
		n := 0
		r := io.MultiReader(strings.NewReader(strings.Repeat(doc, 70)))
		if err := Parse(r, func(Object) error { n++; return nil }); err != nil || n != 70 {
			t.Fatalf("70 documents of 1 MiB: %d, %v", n, err)
		}
	})
}

// A large object that fails as JSON is not decoded again as YAML.
func TestNoYAMLRetryOfHugeObjects(t *testing.T) {
	big := `{"schema":"x","pad":"` + strings.Repeat("z", maxYAMLRetry) + `"`
	err := Parse(strings.NewReader(big), func(Object) error { return nil })
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "as YAML") {
		t.Fatalf("%v", err)
	}
	small := `{"schema":"x","pad":"zz"`
	if err := Parse(strings.NewReader(small), func(Object) error { return nil }); err == nil || !strings.Contains(err.Error(), "as YAML") {
		t.Fatalf("small object: %v, want the YAML retry as before", err)
	}
}
