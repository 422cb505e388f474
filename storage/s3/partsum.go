package s3

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash"
	stdcrc "hash/crc32"
	"io"
	"os"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// A part's checksums are taken while it is copied into its slot. Left to
// the SDK, every request first reads its whole body back from the scratch
// file to compute them (CRC32, and over plain HTTP the SHA-256 it signs)
// before its first byte goes out: a second pass over every byte, on the
// path of a part's send, while the store waits.

// partSum is what one part's requests carry: its CRC32 (base64, as the
// header takes it) and, when payloads are signed, its SHA-256 (hex).
type partSum struct {
	crc32  string
	sha256 string
}

// summer takes a part's checksums as its bytes go by.
type summer struct {
	crc hash.Hash32
	sha hash.Hash // nil: payloads are not signed
}

func newSummer(signed bool) *summer {
	s := &summer{crc: stdcrc.NewIEEE()}
	if signed {
		s.sha = sha256.New()
	}
	return s
}

func (s *summer) Write(p []byte) (int, error) {
	s.crc.Write(p)
	if s.sha != nil {
		s.sha.Write(p)
	}
	return len(p), nil
}

func (s *summer) sum() partSum {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], s.crc.Sum32())
	ps := partSum{crc32: base64.StdEncoding.EncodeToString(b[:])}
	if s.sha != nil {
		ps.sha256 = hex.EncodeToString(s.sha.Sum(nil))
	}
	return ps
}

// fillSlot copies up to n bytes of r into f at off and returns how many,
// and their checksums; fewer than n means r has ended.
func (s *Store) fillSlot(f *os.File, off int64, r io.Reader, n int64, buf []byte) (int64, partSum, error) {
	sm := newSummer(s.signPayload)
	got, err := io.CopyBuffer(io.MultiWriter(io.NewOffsetWriter(f, off), sm), io.LimitReader(r, n), buf)
	return got, sm.sum(), err
}

// options makes the SDK sign the payload hash already taken instead of
// reading the body for it. The CRC32 goes in the request's input.
func (ps partSum) options() []func(*awss3.Options) {
	if ps.sha256 == "" {
		return nil
	}
	return []func(*awss3.Options){func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			// First in Finalize: before the retries, the checksum step
			// and the payload hash step, which keeps a hash already set.
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("catalogsync.PartSHA256",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
					middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, ps.sha256), in)
				}), middleware.Before)
		})
	}}
}
