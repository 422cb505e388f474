package fbc

import (
	"bytes"
	"os"
	"testing"
)

func communityData(b *testing.B) [][]byte {
	dir := sharedFBC + "/community-v4.21/configs"
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("%s absent: %v", dir, err)
	}
	var out [][]byte
	for _, f := range catalogFiles(b, dir) {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func benchParse(b *testing.B, parse func([]byte) error) {
	benchParseFiles(b, communityData(b), parse)
}

func benchParseFiles(b *testing.B, files [][]byte, parse func([]byte) error) {
	n := 0
	for _, f := range files {
		n += len(f)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			if err := parse(f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func discard(Object) error { return nil }

// BenchmarkParseCommunity measures Parse on the 13.9 MB community catalog.
func BenchmarkParseCommunity(b *testing.B) {
	benchParse(b, func(f []byte) error { return Parse(bytes.NewReader(f), discard) })
}

// BenchmarkParseCommunityYAMLv2 is the fast path with every document sent
// to the yaml.v2 fallback.
func BenchmarkParseCommunityYAMLv2(b *testing.B) {
	benchParse(b, func(f []byte) error {
		p := parser{fn: discard, noFast: true}
		return p.run(bytes.NewReader(f))
	})
}

// BenchmarkParseCommunityReference is the straightforward path.
func BenchmarkParseCommunityReference(b *testing.B) {
	benchParse(b, func(f []byte) error { return parseReference(bytes.NewReader(f), discard) })
}

// BenchmarkValidateCommunity measures Add and Validate for the 13.9 MB
// community catalog (objects parsed once, outside the timer).
func BenchmarkValidateCommunity(b *testing.B) {
	files := communityData(b)
	var objs []Object
	for _, f := range files {
		if err := Parse(bytes.NewReader(f), func(o Object) error { objs = append(objs, o); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		v := NewValidator()
		for _, o := range objs {
			v.Add("catalog.yaml", o)
		}
		if err := v.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseCommunityParallel parses the files on every core, as a
// sync does.
func BenchmarkParseCommunityParallel(b *testing.B) {
	files := communityData(b)
	n := 0
	for _, f := range files {
		n += len(f)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, f := range files {
				if err := Parse(bytes.NewReader(f), discard); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}

// BenchmarkParseCommunityJSON parses the community catalog re-encoded as
// JSON streams (the format of many production catalogs).
func BenchmarkParseCommunityJSON(b *testing.B) {
	var files [][]byte
	for _, f := range communityData(b) {
		var stream []byte
		if err := Parse(bytes.NewReader(f), func(o Object) error { stream = append(stream, o.Blob...); return nil }); err != nil {
			b.Fatal(err)
		}
		files = append(files, stream)
	}
	benchParseFiles(b, files, func(f []byte) error { return Parse(bytes.NewReader(f), discard) })
}
