package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/catalogsync/catalogsync/storage"
)

// readSources records the sources of the current content, whose meta.json
// the candidates loop does not read otherwise.
func (r *gcRun) readSources(ctx context.Context, name, digest string) error {
	m, err := readMeta(ctx, r.s, name, digest)
	switch {
	case err == nil:
		r.addSources(name, digest, m.Sources())
	case errors.Is(err, storage.ErrNotExist), errors.Is(err, ErrCorrupt), errors.Is(err, ErrFormat):
	default:
		return fmt.Errorf("catalog: gc: %w", err)
	}
	return nil
}

func (r *gcRun) addSources(name, digest string, sources []string) {
	if len(sources) == 0 {
		return
	}
	if r.sources[name] == nil {
		r.sources[name] = map[string][]string{}
	}
	r.sources[name][digest] = sources
}

// protect marks, once everything is planned, what the content kept
// (current or not) reads, following sources transitively: content whose
// lines other content shares is kept as long as that content is, complete
// or not, whatever the age and size rules said.
func (r *gcRun) protect() {
	r.protected = map[string]map[string]bool{}
	queue := slices.Clone(r.roots)
	for _, it := range r.rep.Kept {
		if it.Digest != "" {
			queue = append(queue, [2]string{it.Catalog, it.Digest})
		}
	}
	for len(queue) > 0 {
		name, digest := queue[0][0], queue[0][1]
		queue = queue[1:]
		for _, src := range r.sources[name][digest] {
			if r.protected[name] == nil {
				r.protected[name] = map[string]bool{}
			}
			if !r.protected[name][src] {
				r.protected[name][src] = true
				queue = append(queue, [2]string{name, src})
			}
		}
	}
}
