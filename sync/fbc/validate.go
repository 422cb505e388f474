package fbc

import (
	"bytes"
	"fmt"
	"strings"
)

// ValidationError is one violated rule. It matches ErrInvalid with
// errors.Is; errors.As gives the details.
type ValidationError struct {
	Path    string // file of the offending object, when known
	Package string // package the rule concerns, when known
	Rule    string // which check failed: one of the Rule constants
	Msg     string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Package != "" {
		fmt.Fprintf(&b, "package %q: ", e.Package)
	}
	b.WriteString(e.Msg)
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", e.Path)
	}
	return b.String()
}

// Is reports a ValidationError as ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Stats counts the objects a Validator has seen.
type Stats struct {
	Packages, Channels, Bundles, Deprecations, Others int
}

type item struct {
	path, pkg, name string
	ref             *Ref
}

// Validator collects the objects of one catalog, in catalog order, and
// checks the whole catalog once: the rules of operator-registry's
// declcfg.LoadFS, declcfg.ConvertToModel and model.Validate, as `opm
// validate` applies them (see Validate). Objects of unknown schemas are
// counted and not validated. It is not safe for concurrent use.
type Validator struct {
	packages, channels, bundles, deprecations []item
	others                                    int
	errs                                      []error
}

// NewValidator returns an empty Validator.
func NewValidator() *Validator { return &Validator{} }

// Add records one object; path is the file it came from, for messages.
func (v *Validator) Add(path string, o Object) {
	ref := o.Ref
	var it *[]item
	switch o.Schema {
	case "":
		v.errs = append(v.errs, &ValidationError{Path: path, Rule: RuleSchemaMissing, Msg: fmt.Sprintf("object '%s' is missing root schema field", bytes.TrimSpace(o.Blob))})
		return
	case SchemaPackage:
		it = &v.packages
	case SchemaChannel:
		it = &v.channels
	case SchemaBundle:
		it = &v.bundles
	case SchemaDeprecations:
		it = &v.deprecations
	default:
		v.others++
		return
	}
	if ref == nil {
		// Built by hand rather than by Parse: read the blob.
		ref = refFromBlob(o)
	}
	*it = append(*it, item{path, o.Package, o.Name, ref})
}

func refFromBlob(o Object) *Ref {
	var a arena
	p := jsonParser{a: &a, src: o.Blob}
	root, err := p.value()
	if err != nil {
		return &Ref{Problems: []string{fmt.Sprintf("blob is not valid JSON: %v", err)}}
	}
	return a.ref(root, o.Schema)
}

// Stats returns how many objects of each kind were added.
func (v *Validator) Stats() Stats {
	return Stats{len(v.packages), len(v.channels), len(v.bundles), len(v.deprecations), v.others}
}

// joinErrors is errors.Join with a count in front.
type joinedErrors []error

func joinErrors(errs []error) error { return joinedErrors(errs) }

func (j joinedErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d problem(s):", ErrInvalid, len(j))
	for _, e := range j {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

func (j joinedErrors) Unwrap() []error { return j }
