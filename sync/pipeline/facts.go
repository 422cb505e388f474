package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/catalogsync/catalogsync/sync/fbc"
)

// fileFacts is what a later sync needs of one FBC file to skip parsing
// it: where its objects lie in catalog.jsonl and what validation reads of
// each. The file's path is not kept: the same bytes may move.
type fileFacts struct {
	Sum     [32]byte // sha256 of the file's bytes
	Off     int64    // its first object's offset in catalog.jsonl
	Len     int64    // the bytes of its objects, which lie together
	Objects []objFact
	// Shape is the GraphQL shape of its objects (gqlshape JSON), merged
	// in file order instead of observing every line again.
	Shape []byte
}

// objFact is one object of a file, without its bytes.
type objFact struct {
	Schema, Package, Name string
	N                     int64 // its line's length
	Ref                   *fbc.Ref
}

// The summary is a sequence of records, each a uvarint length and a
// fileFacts in the compact encoding below. It is our own format, read
// back with a bound on every length, so a damaged file costs a full sync
// and never memory (see readFacts).
var errFacts = errors.New("damaged file summary")

// maxFactsRecord bounds one file's record when it is read back: the
// record of a file of hundreds of MB reads as damage, which costs a full
// sync, never memory.
const maxFactsRecord = 64 << 20

// factsAt is where one record, its length prefix included, lies in a
// summary being written.
type factsAt struct {
	sp  *spool
	off int64
	n   int
}

// read decodes the record.
func (at *factsAt) read() (*fileFacts, error) {
	var d factsReader
	return d.read(at)
}

// factsReader decodes records one after the other, keeping its buffer
// and string table for the next: decoded afresh for each of the 528
// records of a 222 MB catalog, they were a third of what validation
// allocated, each byte of which costs GC time under the sync's memory
// limit.
type factsReader struct {
	buf  []byte
	seen map[string]string
}

func (d *factsReader) read(at *factsAt) (*fileFacts, error) {
	if cap(d.buf) < at.n {
		d.buf = make([]byte, at.n)
	}
	b := d.buf[:at.n]
	if err := at.sp.readAt(b, at.off); err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n != uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: record length", errFacts)
	}
	if d.seen == nil {
		d.seen = map[string]string{}
	}
	clear(d.seen)
	return decodeFactsWith(b[k:], d.seen)
}

type factsEnc struct{ b []byte }

func (e *factsEnc) num(n uint64) { e.b = binary.AppendUvarint(e.b, n) }
func (e *factsEnc) str(s string) { e.num(uint64(len(s))); e.b = append(e.b, s...) }
func (e *factsEnc) raw(b []byte) { e.num(uint64(len(b))); e.b = append(e.b, b...) }
func (e *factsEnc) strs(ss []string) {
	e.num(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// appendFacts appends f's record to b. The record is encoded in place
// after room for the longest length prefix, then moved back over the
// room the prefix did not need: no buffer of its own per file.
func appendFacts(b []byte, f *fileFacts) []byte {
	start := len(b)
	e := factsEnc{b: append(b, make([]byte, binary.MaxVarintLen64)...)}
	e.b = append(e.b, f.Sum[:]...)
	e.num(uint64(f.Off))
	e.num(uint64(f.Len))
	e.num(uint64(len(f.Objects)))
	for _, o := range f.Objects {
		e.str(o.Schema)
		e.str(o.Package)
		e.str(o.Name)
		e.num(uint64(o.N))
		e.ref(o.Ref)
	}
	e.raw(f.Shape)
	body := start + binary.MaxVarintLen64
	var prefix [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(prefix[:], uint64(len(e.b)-body))
	copy(e.b[start+k:], e.b[body:])
	copy(e.b[start:], prefix[:k])
	return e.b[:len(e.b)-(binary.MaxVarintLen64-k)]
}

func (e *factsEnc) ref(r *fbc.Ref) {
	if r == nil {
		e.num(0)
		return
	}
	e.num(1)
	e.str(r.DefaultChannel)
	e.num(uint64(len(r.Entries)))
	for _, c := range r.Entries {
		e.str(c.Name)
		e.str(c.Replaces)
		e.strs(c.Skips)
	}
	e.str(r.Image)
	e.num(uint64(len(r.Packages)))
	for _, p := range r.Packages {
		e.str(p.PackageName)
		e.str(p.Version)
	}
	if r.HasObjects {
		e.num(1)
	} else {
		e.num(0)
	}
	e.num(uint64(len(r.Deprecations)))
	for _, d := range r.Deprecations {
		e.str(d.Schema)
		e.str(d.Name)
		e.str(d.Message)
	}
	e.strs(r.Problems)
	e.strs(r.PropertyProblems)
	e.strs(r.ObjectProblems)
}

// factsDec reads one record; the first error sticks and every later read
// returns zero values.
type factsDec struct {
	b   []byte
	err error
	// seen holds the record's strings read so far: a file's package
	// name is in each of its objects, a bundle's name in its channels'
	// entries and in the next one's replaces. Decoded facts are the
	// largest part of a sync's heap while it validates (every object's);
	// one copy each took those of the 222 MB catalog from 8.6 to 6.9 MB.
	seen map[string]string
}

func (d *factsDec) fail() {
	if d.err == nil {
		d.err = errFacts
	}
	d.b = nil
}

func (d *factsDec) num() uint64 {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return n
}

// count reads a length that must fit in the bytes left, at least one
// byte per element.
func (d *factsDec) count() int {
	n := d.num()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *factsDec) str() string {
	n := d.count()
	b := d.b[:n]
	d.b = d.b[n:]
	if s, ok := d.seen[string(b)]; ok {
		return s
	}
	s := string(b)
	d.seen[s] = s
	return s
}

func (d *factsDec) strs() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// decodeFacts reads one record's bytes.
func decodeFacts(b []byte) (*fileFacts, error) {
	return decodeFactsWith(b, map[string]string{})
}

// decodeFactsWith is decodeFacts with an empty string table of the
// caller's. The facts keep no reference to b.
func decodeFactsWith(b []byte, seen map[string]string) (*fileFacts, error) {
	d := &factsDec{b: b, seen: seen}
	f := &fileFacts{}
	if len(d.b) < len(f.Sum) {
		return nil, errFacts
	}
	copy(f.Sum[:], d.b)
	d.b = d.b[len(f.Sum):]
	f.Off, f.Len = int64(d.num()), int64(d.num())
	if n := d.count(); n > 0 {
		f.Objects = make([]objFact, n)
	}
	var total int64
	for i := range f.Objects {
		o := &f.Objects[i]
		o.Schema, o.Package, o.Name = d.str(), d.str(), d.str()
		o.N = int64(d.num())
		o.Ref = d.ref()
		if o.N <= 0 || o.N > f.Len {
			d.fail()
		}
		total += o.N
	}
	if n := d.count(); n > 0 {
		f.Shape = bytes.Clone(d.b[:n])
		d.b = d.b[n:]
	}
	if d.err != nil || len(d.b) != 0 || f.Off < 0 || f.Len <= 0 || total != f.Len {
		return nil, fmt.Errorf("%w: a record does not add up", errFacts)
	}
	return f, nil
}

func (d *factsDec) ref() *fbc.Ref {
	if d.num() == 0 {
		return nil
	}
	r := &fbc.Ref{DefaultChannel: d.str()}
	if n := d.count(); n > 0 {
		r.Entries = make([]fbc.ChannelEntry, n)
		for i := range r.Entries {
			r.Entries[i] = fbc.ChannelEntry{Name: d.str(), Replaces: d.str(), Skips: d.strs()}
		}
	}
	r.Image = d.str()
	if n := d.count(); n > 0 {
		r.Packages = make([]fbc.PackageProperty, n)
		for i := range r.Packages {
			r.Packages[i] = fbc.PackageProperty{PackageName: d.str(), Version: d.str()}
		}
	}
	r.HasObjects = d.num() == 1
	if n := d.count(); n > 0 {
		r.Deprecations = make([]fbc.DeprecationEntry, n)
		for i := range r.Deprecations {
			r.Deprecations[i] = fbc.DeprecationEntry{Schema: d.str(), Name: d.str(), Message: d.str()}
		}
	}
	r.Problems, r.PropertyProblems, r.ObjectProblems = d.strs(), d.strs(), d.strs()
	return r
}
