package s3

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/catalogsync/catalogsync/storage"
)

// maxCopy is the largest object one CopyObject copies; larger ones would
// need a multipart copy, and storage.Copy streams them instead.
const maxCopy = 5 << 30

// Copy implements storage.Copier with CopyObject: the bytes stay in the
// service, the headers are replaced by h. The source is pinned by the
// ETag its HeadObject gave, so a source replaced in between fails the
// copy rather than mixing versions. Objects over 5 GiB are
// storage.ErrCopyUnsupported.
func (s *Store) Copy(ctx context.Context, dst, src string, h storage.Headers) (storage.Info, error) {
	if err := s.checkKey(dst); err != nil {
		return storage.Info{}, err
	}
	in, err := s.Stat(ctx, src)
	if err != nil {
		return storage.Info{}, err
	}
	if in.Size > s.maxCopy {
		return storage.Info{}, fmt.Errorf("s3: copy %q: %d bytes: %w", src, in.Size, storage.ErrCopyUnsupported)
	}
	out, err := s.client.CopyObject(ctx, &awss3.CopyObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + dst),
		CopySource:        aws.String(copySource(s.bucket, s.prefix+src)),
		CopySourceIfMatch: aws.String(ifMatch(in.ETag)),
		MetadataDirective: types.MetadataDirectiveReplace,
		ContentType:       optional(h.ContentType), ContentEncoding: optional(h.ContentEncoding),
	})
	if err != nil {
		return storage.Info{}, wrap(ctx, "copy", src+" to "+dst, err)
	}
	tag, mod := "", time.Now()
	if r := out.CopyObjectResult; r != nil {
		tag = etag(r.ETag)
		if r.LastModified != nil {
			mod = *r.LastModified
		}
	}
	return storage.Info{Key: dst, Size: in.Size, ModTime: mod, ETag: tag}, nil
}

// copySource is CopyObject's "bucket/key", each segment URL-escaped.
func copySource(bucket, full string) string {
	parts := strings.Split(full, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return bucket + "/" + strings.Join(parts, "/")
}
