package pipeline

import (
	"fmt"

	"github.com/catalogsync/catalogsync/sync/fbc"
	"github.com/catalogsync/catalogsync/sync/unpack"
)

// validated is a catalog that passed validation, in catalog order.
type validated struct {
	files   []unpack.File
	results map[string]*fileResult
	stats   fbc.Stats
	objects int
	reused  int // files whose facts came from the published content
}

// unpacked returns the final files, in catalog order (Unpacking).
func (a *attempt) unpacked(u *unpack.Unpacker) ([]unpack.File, error) {
	t := a.p.now()
	a.rep.emit(Event{Phase: PhaseUnpacking})
	files, err := u.Files()
	if err != nil {
		return nil, layerError(err)
	}
	a.phase(PhaseUnpacking, t)
	return files, nil
}

// validate checks the final files in catalog order, before anything is
// published (Validating).
func (a *attempt) validate(files []unpack.File, results map[string]*fileResult) (validated, error) {
	t := a.p.now()
	v := fbc.NewValidator()
	out := validated{files: files, results: results}
	for _, file := range files {
		fr := results[file.Content]
		if fr == nil {
			return out, &Error{Phase: PhaseValidating, Reason: ReasonInternal, Err: fmt.Errorf("file %s was not parsed", file.Content)}
		}
		if fr.reused != nil {
			if fr.err != nil {
				return out, reuseMismatch(file.Path, fmt.Errorf("the file does not parse now: %w", fr.err))
			}
			out.objects += addFacts(v, file.Path, fr.reused)
			out.reused++
			continue
		}
		if fr.err != nil {
			return out, &Error{Phase: PhaseValidating, Reason: ReasonInvalidCatalog, Err: fmt.Errorf("%s: %w", file.Path, fr.err)}
		}
		objs, at := fr.parsed()
		if at == nil {
			for _, o := range objs {
				v.Add(file.Path, o.obj)
			}
			out.objects += len(objs)
			continue
		}
		f, err := at.read()
		if err != nil {
			return out, spoolError(PhaseValidating, err)
		}
		out.objects += addFacts(v, file.Path, f)
	}
	out.stats = v.Stats()
	a.res.Files, a.res.FilesReused = len(files), out.reused
	a.rep.emit(Event{Phase: PhaseValidating, Bundles: out.stats.Bundles, Packages: out.stats.Packages, Objects: out.objects})
	if err := v.Validate(); err != nil {
		return out, &Error{Phase: PhaseValidating, Reason: ReasonInvalidCatalog, Err: err}
	}
	a.phase(PhaseValidating, t)
	return out, nil
}
