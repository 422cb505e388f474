package s3

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/catalogsync/catalogsync/storage"
)

// Upload is a multipart upload that was started and neither completed nor
// aborted: its parts take space but no object shows them.
type Upload struct {
	// Key is the key being written (without the store's prefix).
	Key       string
	UploadID  string
	Initiated time.Time
	// Size is what its uploaded parts hold.
	Size int64
}

// StaleUploads lists the unfinished multipart uploads of keys starting
// with prefix ("" for all the store's) that started more than olderThan ago
// (olderThan <= 0: all of them).
//
// keys names objects whose uploads are listed one by one as well: MinIO
// treats a ListMultipartUploads prefix as one exact object name, and lists
// uploads without a prefix only from memory (those begun since it last
// started). On MinIO, pass the keys that may have interrupted uploads;
// others are left to MinIO's own expiry of stale uploads (a day by
// default).
func (s *Store) StaleUploads(ctx context.Context, prefix string, olderThan time.Duration, keys ...string) ([]Upload, error) {
	if !storage.ValidPrefix(prefix) {
		return nil, fmt.Errorf("s3: list uploads %q: %w", prefix, storage.ErrInvalidKey)
	}
	cutoff := time.Now().Add(-olderThan)
	seen := map[string]bool{}
	var out []Upload
	for i, p := range append([]string{prefix}, keys...) {
		if i > 0 && (!storage.ValidKey(p) || !strings.HasPrefix(p, prefix)) {
			return nil, fmt.Errorf("s3: list uploads of %q under %q: %w", p, prefix, storage.ErrInvalidKey)
		}
		ups, err := s.listUploads(ctx, s.prefix+p)
		if err != nil {
			return nil, err
		}
		for _, u := range ups {
			if seen[u.UploadID] || olderThan > 0 && !u.Initiated.Before(cutoff) {
				continue
			}
			seen[u.UploadID] = true
			n, err := s.partsSize(ctx, u)
			if err != nil {
				return nil, err
			}
			u.Size = n
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b Upload) int { return a.Initiated.Compare(b.Initiated) })
	return out, nil
}

// listUploads lists the uploads ListMultipartUploads gives for prefix
// (a full key), with keys relative to the store's prefix.
func (s *Store) listUploads(ctx context.Context, prefix string) ([]Upload, error) {
	in := &awss3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket), EncodingType: types.EncodingTypeUrl,
	}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	var out []Upload
	for {
		page, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, wrap(ctx, "list uploads", strings.TrimPrefix(prefix, s.prefix), err)
		}
		for _, u := range page.Uploads {
			full, err := url.QueryUnescape(aws.ToString(u.Key))
			if err != nil {
				return nil, fmt.Errorf("s3: list uploads: undecodable key %q: %w", aws.ToString(u.Key), err)
			}
			key, ok := strings.CutPrefix(full, s.prefix)
			if !ok || !strings.HasPrefix(full, prefix) {
				continue
			}
			out = append(out, Upload{Key: key, UploadID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		next := &awss3.ListMultipartUploadsInput{
			Bucket: in.Bucket, Prefix: in.Prefix, EncodingType: in.EncodingType,
			KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker,
		}
		// The markers come back URL-encoded too.
		if next.KeyMarker != nil && page.EncodingType == types.EncodingTypeUrl {
			if k, err := url.QueryUnescape(*next.KeyMarker); err == nil {
				next.KeyMarker = aws.String(k)
			}
		}
		if aws.ToString(next.KeyMarker) == aws.ToString(in.KeyMarker) &&
			aws.ToString(next.UploadIdMarker) == aws.ToString(in.UploadIdMarker) {
			return nil, fmt.Errorf("s3: list uploads: listing does not advance past %q", aws.ToString(in.KeyMarker))
		}
		in = next
	}
}

// partsSize adds up the parts of an upload; one that vanished meanwhile
// (completed or aborted) holds nothing.
func (s *Store) partsSize(ctx context.Context, u Upload) (int64, error) {
	var n int64
	p := awss3.NewListPartsPaginator(s.client, &awss3.ListPartsInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + u.Key), UploadId: aws.String(u.UploadID),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if apiCode(err) == "NoSuchUpload" {
			return n, nil
		}
		if err != nil {
			return 0, wrap(ctx, "list parts", u.Key, err)
		}
		for _, part := range page.Parts {
			n += aws.ToInt64(part.Size)
		}
	}
	return n, nil
}

// AbortStaleUploads aborts the unfinished multipart uploads that
// StaleUploads lists and returns them. A live upload
// younger than olderThan is left alone; choose olderThan far longer than
// the longest Put (the default of catalog.GC is a day).
func (s *Store) AbortStaleUploads(ctx context.Context, prefix string, olderThan time.Duration, keys ...string) ([]Upload, error) {
	ups, err := s.StaleUploads(ctx, prefix, olderThan, keys...)
	if err != nil {
		return nil, err
	}
	var done []Upload
	for _, u := range ups {
		_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + u.Key), UploadId: aws.String(u.UploadID),
		})
		// Someone else (another GC, the uploader itself) got there first.
		if err != nil && apiCode(err) != "NoSuchUpload" {
			return done, wrap(ctx, "abort upload", u.Key, err)
		}
		done = append(done, u)
	}
	return done, nil
}

// Leftovers lists stale uploads as catalog.GC wants them: Key is the key
// being written, ModTime when the upload started, Size what its parts hold
// and ETag the upload ID.
func (s *Store) Leftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	ups, err := s.StaleUploads(ctx, prefix, olderThan, keys...)
	return uploadInfos(ups), err
}

// RemoveLeftovers aborts stale uploads (see AbortStaleUploads) for
// catalog.GC.
func (s *Store) RemoveLeftovers(ctx context.Context, prefix string, olderThan time.Duration, keys []string) ([]storage.Info, error) {
	ups, err := s.AbortStaleUploads(ctx, prefix, olderThan, keys...)
	return uploadInfos(ups), err
}

func uploadInfos(ups []Upload) []storage.Info {
	var out []storage.Info
	for _, u := range ups {
		out = append(out, storage.Info{Key: u.Key, Size: u.Size, ModTime: u.Initiated, ETag: u.UploadID})
	}
	return out
}
