package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// ErrCompression is returned for a layer whose compression is unknown or
// that does not match its media type.
var ErrCompression = errors.New("unsupported layer compression")

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Decompress wraps a layer stream in the decoder its media type names.
// Registries and build tools label layers loosely (docker types, "tar" for
// gzip data, octet-stream), so the stream's magic bytes decide and the
// media type only has to agree with them where it is specific.
func Decompress(mediaType string, r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read layer: %w", err)
	}
	want := wantedCompression(mediaType)
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		if want == "zstd" {
			return nil, fmt.Errorf("%w: media type %s but gzip data", ErrCompression, mediaType)
		}
		zr, err := gzip.NewReader(br)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// Cut short: the transfer, not the data, may be at fault.
			return nil, fmt.Errorf("read layer: gzip header: %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCompression, err)
		}
		return zr, nil
	case bytes.HasPrefix(head, zstdMagic):
		if want == "gzip" {
			return nil, fmt.Errorf("%w: media type %s but zstd data", ErrCompression, mediaType)
		}
		// Bound the decoder's window so a crafted frame cannot ask for
		// gigabytes of memory.
		zr, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCompression, err)
		}
		return zr.IOReadCloser(), nil
	default:
		if want == "gzip" || want == "zstd" {
			return nil, fmt.Errorf("%w: media type %s but data is not %s", ErrCompression, mediaType, want)
		}
		return io.NopCloser(br), nil
	}
}

func wantedCompression(mt string) string {
	switch {
	case strings.HasSuffix(mt, "+gzip"), strings.HasSuffix(mt, ".tar.gzip"):
		return "gzip"
	case strings.HasSuffix(mt, "+zstd"), strings.HasSuffix(mt, ".tar.zstd"):
		return "zstd"
	}
	return ""
}
