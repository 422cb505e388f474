package pipeline

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

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
	recs := readRecords(files, results)
	defer recs.stop()
	for i, file := range files {
		objs, f, err := recs.get(i)
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
		if err != nil {
			return out, spoolError(PhaseValidating, err)
		}
		if f == nil {
			for _, o := range objs {
				v.Add(file.Path, o.obj)
			}
			out.objects += len(objs)
			continue
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

// records decodes the records of the parsed files the streamer wrote on
// every core, ahead of validation, which adds them in catalog order:
// decoded one after the other, they were half of the validation that
// follows the last layer byte (25 of 55 ms for 222 MB of FBC). Decoders
// run at most a few files ahead, so the decoded files waiting are few.
type records struct {
	objs  [][]objRec
	at    []*factsAt
	facts []*fileFacts
	errs  []error
	ready []chan struct{}
	next  atomic.Int64
	ahead chan struct{} // a token per file a decoder may take
	done  chan struct{}
	wg    sync.WaitGroup
}

// readRecords starts decoding the records of files; a file whose objects
// the streamer has not dropped yet keeps them.
func readRecords(files []unpack.File, results map[string]*fileResult) *records {
	n, workers := len(files), runtime.GOMAXPROCS(0)
	r := &records{objs: make([][]objRec, n), at: make([]*factsAt, n), facts: make([]*fileFacts, n),
		errs: make([]error, n), ready: make([]chan struct{}, n),
		ahead: make(chan struct{}, 2*workers), done: make(chan struct{})}
	for i, file := range files {
		r.ready[i] = make(chan struct{})
		if fr := results[file.Content]; fr != nil && fr.reused == nil && fr.err == nil {
			r.objs[i], r.at[i] = fr.parsed()
		}
	}
	for range cap(r.ahead) {
		r.ahead <- struct{}{}
	}
	for range min(workers, n) {
		r.wg.Go(r.decode)
	}
	return r
}

// decode takes a token before the next file, so the files taken and not
// yet consumed hold every token and the next one consumed is among them.
func (r *records) decode() {
	var d factsReader
	for {
		select {
		case <-r.ahead:
		case <-r.done:
			return
		}
		i := int(r.next.Add(1)) - 1
		if i >= len(r.at) {
			return
		}
		if r.at[i] != nil {
			r.facts[i], r.errs[i] = d.read(r.at[i])
		}
		close(r.ready[i])
	}
}

// get returns file i's objects from its parse, or its decoded record;
// call it for each file in order.
func (r *records) get(i int) ([]objRec, *fileFacts, error) {
	<-r.ready[i]
	objs, f, err := r.objs[i], r.facts[i], r.errs[i]
	r.objs[i], r.facts[i] = nil, nil
	r.ahead <- struct{}{}
	return objs, f, err
}

// stop ends the decoding once validation no longer needs it.
func (r *records) stop() {
	close(r.done)
	r.wg.Wait()
}
