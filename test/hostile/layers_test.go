package hostile

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/manifest"
	"github.com/regclient/regclient/types/mediatype"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/platform"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// rawLayer is a layer blob exactly as it goes to the registry. imagebuild
// writes well-formed tar archives only; a decompression bomb is built
// here, byte by byte, so that it costs nothing to make and little to push.
type rawLayer struct {
	mediaType string
	blob      []byte
	// diffID is what the image config claims the uncompressed digest is.
	// Nothing that reads a catalog image checks it (catalogsync verifies
	// the compressed blob's digest), so a hostile image may claim anything.
	diffID digest.Digest
}

// buildLayer writes an imagebuild layer into memory.
func buildLayer(t *testing.T, l imagebuild.Layer) rawLayer {
	t.Helper()
	var buf bytes.Buffer
	d, diffID, err := imagebuild.WriteLayer(&buf, l)
	if err != nil {
		t.Fatal(err)
	}
	return rawLayer{mediaType: d.MediaType, blob: buf.Bytes(), diffID: diffID}
}

// pushRaw pushes a linux/amd64 image made of layers (first is the lowest)
// with labels, and returns its manifest digest.
func pushRaw(ctx context.Context, rc *regclient.RegClient, refStr string, labels map[string]string, layers ...rawLayer) (string, error) {
	r, err := ref.New(refStr)
	if err != nil {
		return "", err
	}
	var descs []descriptor.Descriptor
	var diffIDs []digest.Digest
	for i, l := range layers {
		d := descriptor.Descriptor{MediaType: l.mediaType, Digest: digest.FromBytes(l.blob), Size: int64(len(l.blob))}
		if _, err := rc.BlobPut(ctx, r, d, bytes.NewReader(l.blob)); err != nil {
			return "", fmt.Errorf("layer %d: %w", i, err)
		}
		descs = append(descs, d)
		diffIDs = append(diffIDs, l.diffID)
	}
	plat, _ := platform.Parse("linux/amd64")
	cfg, err := json.Marshal(v1.Image{
		Platform: plat,
		Config:   v1.ImageConfig{Labels: labels},
		RootFS:   v1.RootFS{Type: "layers", DiffIDs: diffIDs},
	})
	if err != nil {
		return "", err
	}
	cfgDesc := descriptor.Descriptor{MediaType: mediatype.OCI1ImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	if _, err := rc.BlobPut(ctx, r, cfgDesc, bytes.NewReader(cfg)); err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	raw, err := json.Marshal(v1.Manifest{
		Versioned: v1.ManifestSchemaVersion,
		MediaType: mediatype.OCI1Manifest,
		Config:    cfgDesc,
		Layers:    descs,
	})
	if err != nil {
		return "", err
	}
	m, err := manifest.New(manifest.WithRaw(raw))
	if err != nil {
		return "", err
	}
	if err := rc.ManifestPut(ctx, r, m); err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	return m.GetDescriptor().Digest.String(), nil
}

// tarHeader returns the tar header blocks of a regular file of size
// bytes; the file's content and the archive's end are left to the caller.
func tarHeader(t *testing.T, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	// The header is written at once (with a PAX header before it for
	// sizes that do not fit ustar's 8 GiB); the content would follow.
	if buf.Len() == 0 || buf.Len()%512 != 0 {
		t.Fatalf("tar header of %q is %d bytes, want whole blocks", name, buf.Len())
	}
	return buf.Bytes()
}

// tarFileOfZeros is the uncompressed length of what follows tarHeader for a
// file of size zero bytes: the content padded to a block, then the two
// zero blocks that end the archive. All of it is zeros.
func tarFileOfZeros(size int64) int64 {
	return size + (512-size%512)%512 + 1024
}

// gzipBomb returns a valid gzip stream (OCI layer media type ...tar+gzip)
// whose content is prefix followed by zeros zero bytes, without ever
// materialising the content: deflate encodes one MiB of zeros, preceded by
// at least a window of zeros, in the same bytes every time, so one such
// block is compressed once and repeated. The trailer's CRC-32 is computed
// arithmetically (crc32Zeros). About 1 KiB of gzip per MiB of content.
func gzipBomb(t *testing.T, prefix []byte, zeros int64) []byte {
	t.Helper()
	const window = 64 << 10 // more than deflate's 32 KiB reach
	if zeros < window {
		t.Fatalf("gzipBomb: at least %d zeros", window)
	}
	var out bytes.Buffer
	// gzip member header: deflate, no flags, no mtime, unknown OS.
	out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	fw, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	fw.Write(prefix)
	fw.Write(zero[:window])
	fw.Flush() // byte-aligned from here on
	mark := out.Len()
	fw.Write(zero)
	fw.Flush()
	chunk := bytes.Clone(out.Bytes()[mark:])
	done := int64(window + len(zero))
	for done+int64(len(zero)) <= zeros {
		out.Write(chunk)
		done += int64(len(zero))
	}
	// The rest (< 1 MiB) from a fresh compressor: its output starts with
	// a block of its own, on the byte boundary the flush left, and Close
	// ends the stream with the final block.
	fw, err = flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(zero[:zeros-done])
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	crc := crc32Zeros(crc32.ChecksumIEEE(prefix), zeros)
	var tr [8]byte
	binary.LittleEndian.PutUint32(tr[:4], crc)
	binary.LittleEndian.PutUint32(tr[4:], uint32(int64(len(prefix))+zeros)) // ISIZE is mod 2^32
	out.Write(tr[:])
	return out.Bytes()
}

// crc32Zeros returns the IEEE CRC-32 of data followed by n zero bytes,
// given crc, the CRC-32 of data, in O(log n): appending a zero byte is a
// linear map on the CRC register, so n of them are that map's n-th power,
// computed by repeated squaring of 32x32 GF(2) matrices.
func crc32Zeros(crc uint32, n int64) uint32 {
	if n <= 0 {
		return crc
	}
	// odd: the map for one zero bit.
	var odd, even [32]uint32
	odd[0] = crc32.IEEE // reflected polynomial 0xedb88320
	row := uint32(1)
	for i := 1; i < 32; i++ {
		odd[i] = row
		row <<= 1
	}
	square(&even, &odd) // two zero bits
	square(&odd, &even) // four zero bits
	reg := ^crc         // the register before the final inversion
	for {
		square(&even, &odd) // first pass: one zero byte
		if n&1 != 0 {
			reg = times(&even, reg)
		}
		n >>= 1
		if n == 0 {
			break
		}
		square(&odd, &even)
		if n&1 != 0 {
			reg = times(&odd, reg)
		}
		n >>= 1
		if n == 0 {
			break
		}
	}
	return ^reg
}

func times(m *[32]uint32, v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

func square(dst, m *[32]uint32) {
	for i := range dst {
		dst[i] = times(m, m[i])
	}
}

// The bomb builder is only trustworthy if what it claims is true: check
// the CRC shortcut against the real thing, and a small bomb against a
// real decompressor (a corrupt bomb would be refused for the wrong reason).
func TestBombBuilder(t *testing.T) {
	zero := make([]byte, 3<<20+17)
	for _, n := range []int{0, 1, 7, 4096, 65536, 1 << 20, len(zero)} {
		prefix := []byte(fmt.Sprintf("prefix-%d", rand.IntN(1000)))
		want := crc32.ChecksumIEEE(append(bytes.Clone(prefix), zero[:n]...))
		if got := crc32Zeros(crc32.ChecksumIEEE(prefix), int64(n)); got != want {
			t.Fatalf("crc32Zeros(%d) = %08x, want %08x", n, got, want)
		}
	}
	const size = 5<<20 + 123
	hdr := tarHeader(t, "configs/zeros.json", size)
	blob := gzipBomb(t, hdr, tarFileOfZeros(size))
	zr, err := newGzipReader(blob)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil || h.Name != "configs/zeros.json" || h.Size != size {
		t.Fatalf("first entry %+v, %v", h, err)
	}
	n, err := copyAll(tr)
	if err != nil || n != size {
		t.Fatalf("read %d bytes of the file (%v), want %d", n, err, size)
	}
	if _, err := tr.Next(); err == nil {
		t.Fatal("a second entry")
	}
	// The whole stream decodes, CRC and length checked at its end.
	if _, err := copyAll(zr); err != nil {
		t.Fatalf("gzip trailer: %v", err)
	}
	if ratio := float64(size) / float64(len(blob)); ratio < 500 {
		t.Fatalf("compression ratio %.0f, want a bomb (> 500)", ratio)
	}
}

func newGzipReader(blob []byte) (*gzip.Reader, error) { return gzip.NewReader(bytes.NewReader(blob)) }

func copyAll(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }
