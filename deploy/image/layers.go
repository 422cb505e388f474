package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	digest "github.com/opencontainers/go-digest"
	"github.com/regclient/regclient/types/descriptor"
	"github.com/regclient/regclient/types/mediatype"
)

// The user and paths the Dockerfile gives the image too.
const (
	userID   = 65532
	binDir   = "/usr/local/bin"
	binPath  = binDir + "/catalogsync"
	storeDir = "/var/lib/catalogsync"
)

// HOME is /tmp: the root filesystem is read-only in the deploy manifests.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n" //nolint:gosec // G101: the user database, no password in it
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// entry is one file or folder of a layer; a file's content is body, or
// the file at path.
type entry struct {
	name string
	mode int64
	dir  bool
	uid  int
	body []byte
	path string
}

// baseEntries are the files every platform's image shares: users, CA
// bundle, /tmp and the store folder owned by the non-root user.
func baseEntries(caBundle string) ([]entry, error) {
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w (install Debian's ca-certificates or pass --ca-bundle)", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", caBundle)
	}
	return []entry{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: ca},
		{name: "tmp/", dir: true, mode: 0o1777},
		{name: "var/", dir: true, mode: 0o755},
		{name: "var/lib/", dir: true, mode: 0o755},
		{name: storeDir[1:] + "/", dir: true, mode: 0o755, uid: userID},
	}, nil
}

// commands are the binaries the image holds, each built from ./cmd/<name>
// into binDir; the first is the entrypoint.
var commands = []string{"catalogsync", "catalogsync-reader"}

// appEntries hold the binaries, built into dir.
func appEntries(dir string) []entry {
	entries := []entry{
		{name: "usr/", dir: true, mode: 0o755},
		{name: "usr/local/", dir: true, mode: 0o755},
		{name: binDir[1:] + "/", dir: true, mode: 0o755},
	}
	for _, c := range commands {
		entries = append(entries, entry{name: binDir[1:] + "/" + c, mode: 0o755, path: filepath.Join(dir, c)})
	}
	return entries
}

// writeLayer writes entries as a gzip tar to w and returns the blob's
// descriptor and the uncompressed tar's digest (the config's diff ID).
func writeLayer(w io.Writer, entries []entry, mtime time.Time) (descriptor.Descriptor, digest.Digest, error) {
	blobHash, diffHash := sha256.New(), sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, blobHash)}
	buf := bufio.NewWriterSize(cw, 1<<20)
	gz := gzip.NewWriter(buf)
	tw := tar.NewWriter(io.MultiWriter(gz, diffHash))
	for _, e := range entries {
		if err := writeEntry(tw, e, mtime); err != nil {
			return descriptor.Descriptor{}, "", fmt.Errorf("%s: %w", e.name, err)
		}
	}
	for _, c := range []io.Closer{tw, gz} {
		if err := c.Close(); err != nil {
			return descriptor.Descriptor{}, "", err
		}
	}
	if err := buf.Flush(); err != nil {
		return descriptor.Descriptor{}, "", err
	}
	d := descriptor.Descriptor{MediaType: mediatype.OCI1LayerGzip, Digest: sum(blobHash), Size: cw.n}
	return d, sum(diffHash), nil
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime}
	if e.dir {
		h.Typeflag = tar.TypeDir
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	var r io.Reader
	if e.path != "" {
		f, err := os.Open(e.path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h.Size, r = st.Size(), f
	} else {
		h.Size, r = int64(len(e.body)), bytes.NewReader(e.body)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func sum(h hash.Hash) digest.Digest { return digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)) }
