package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	stdcrc "hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// countingBody counts the bytes read from a seekable body, rewinds too.
type countingBody struct {
	r *bytes.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (c *countingBody) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A part goes out read once: the checksums fillSlot took as it copied the
// part into its slot ride in the request, so the SDK does not read the
// body back for its CRC32 nor, over plain HTTP, for the SHA-256 it signs.
// The headers carry the body's own sums either way.
func TestPartIsReadOnce(t *testing.T) {
	body := bytes.Repeat([]byte("catalogsync part \x00\xff"), 300_000) // about 6 MB
	for _, endpoint := range []string{"http://127.0.0.1:9", "https://s3.example.com"} {
		t.Run(endpoint, func(t *testing.T) {
			var hdr http.Header
			var sent []byte
			rt := transportFunc(func(r *http.Request) (*http.Response, error) {
				hdr = r.Header.Clone()
				sent, _ = io.ReadAll(r.Body)
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Etag": {`"e"`}},
					Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			})
			s, err := open(context.Background(), Config{Bucket: "b", Endpoint: endpoint, Region: "us-east-1", PathStyle: true,
				AccessKeyID: "k", SecretAccessKey: "s", HTTPClient: &http.Client{Transport: rt}})
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.CreateTemp(t.TempDir(), "slot")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			n, sum, err := s.fillSlot(f, 3, bytes.NewReader(body), int64(len(body)), make([]byte, 4096))
			if err != nil || n != int64(len(body)) {
				t.Fatalf("fillSlot: %d bytes, %v", n, err)
			}
			cb := &countingBody{r: bytes.NewReader(body)}
			_, err = s.client.UploadPart(context.Background(), &awss3.UploadPartInput{
				Bucket: aws.String("b"), Key: aws.String("k"), UploadId: aws.String("u"), PartNumber: aws.Int32(1),
				ChecksumAlgorithm: crc32, ChecksumCRC32: aws.String(sum.crc32),
				Body: cb, ContentLength: aws.Int64(int64(len(body))),
			}, sum.options()...)
			if err != nil {
				t.Fatal(err)
			}
			if cb.n != len(body) {
				t.Errorf("body read %d bytes for a %d-byte part", cb.n, len(body))
			}
			if !bytes.Equal(sent, body) {
				t.Errorf("sent %d bytes, not the part", len(sent))
			}
			var c [4]byte
			binary.BigEndian.PutUint32(c[:], stdcrc.ChecksumIEEE(body))
			if got, want := hdr.Get("X-Amz-Checksum-Crc32"), base64.StdEncoding.EncodeToString(c[:]); got != want {
				t.Errorf("crc32 header %q, want %q", got, want)
			}
			sha := sha256.Sum256(body)
			want := "UNSIGNED-PAYLOAD"
			if strings.HasPrefix(endpoint, "http:") {
				want = hex.EncodeToString(sha[:])
			}
			if got := hdr.Get("X-Amz-Content-Sha256"); got != want {
				t.Errorf("payload hash header %q, want %q", got, want)
			}
		})
	}
}
