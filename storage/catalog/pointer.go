package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/catalogsync/catalogsync/storage"
)

// Pointer is catalogs/<name>/current: which content is published.
type Pointer struct {
	Digest string `json:"digest"`
	// Ref is the image reference as configured ("registry.example.test/x/y:v4.17"),
	// ResolvedRef the digest reference it resolved to ("registry.example.test/x/y@sha256:…").
	Ref         string `json:"ref"`
	ResolvedRef string `json:"resolvedRef"`
	// Mirror is the registries.conf or cluster mirror the image was
	// resolved at ("mirror.example.test/x"); empty for the image's own
	// registry.
	Mirror string `json:"mirror,omitempty"`
	// VerifiedBy says what verified the image's signature, when the
	// signature policy required one (as meta.json's VerifiedBy).
	VerifiedBy string `json:"verifiedBy,omitempty"`
	// ResolvedAt is when the registry was asked. It orders publishers: a
	// pointer never goes back to an older resolution.
	ResolvedAt  time.Time `json:"resolvedAt"`
	PublishedAt time.Time `json:"publishedAt"`
}

// Current returns the published pointer of name and its ETag (for a cache
// check with Stat, or a compare-and-swap). The ETag is never newer than
// the pointer returned (read with it, or before it): a swap with it
// fails if anything changed since, and a cache keyed by it at worst
// reloads once more. A never published catalog is an error wrapping
// storage.ErrNotExist.
func Current(ctx context.Context, s storage.Store, name string) (Pointer, string, error) {
	if err := checkName(name); err != nil {
		return Pointer{}, "", err
	}
	p, etag, err := readPointer(ctx, s, name)
	if err != nil {
		return Pointer{}, "", err
	}
	return p, etag, nil
}

// readPointer is Current, but returns the ETag of a corrupt pointer too,
// so Publish can replace it.
func readPointer(ctx context.Context, s storage.Store, name string) (Pointer, string, error) {
	key := catalogPrefix(name) + currentFile
	var p Pointer
	etag, err := readControl(ctx, s, key, &p)
	if err != nil {
		return Pointer{}, etag, err
	}
	if !ValidDigest(p.Digest) {
		return Pointer{}, etag, fmt.Errorf("catalog: %s: digest %q: %w", key, p.Digest, ErrCorrupt)
	}
	return p, etag, nil
}

// readControl reads the small JSON object at key (a pointer, a lease) into
// v and returns its ETag, never newer than v (storage.GetInfo). Garbage
// is ErrCorrupt and still comes with its ETag, so a compare-and-swap can
// replace it.
func readControl(ctx context.Context, s storage.Store, key string, v any) (string, error) {
	rc, st, err := storage.GetInfo(ctx, s, key, 0, maxSmall+1)
	if err != nil {
		return "", fmt.Errorf("catalog: %s: %w", key, err)
	}
	b, err := readAllSmall(rc, key)
	if err != nil {
		return "", fmt.Errorf("catalog: %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return st.ETag, fmt.Errorf("catalog: %s: %w: %v", key, ErrCorrupt, err)
	}
	return st.ETag, nil
}

// Publish points name at p.Digest. The content must be complete
// (ErrIncomplete otherwise). It swaps the pointer atomically, re-reading and
// retrying when another publisher got in between, and refuses with ErrStale
// to replace a pointer resolved later than p, so concurrent or delayed
// publishers converge on the newest resolution. Publishing what is already
// current (same digest and ref) is a successful no-op, unless it adds a
// verification the pointer lacks: then the pointer is rewritten with it,
// keeping its PublishedAt. A zero PublishedAt is set to now.
func Publish(ctx context.Context, s storage.Store, name string, p Pointer) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkDigest(p.Digest); err != nil {
		return err
	}
	if p.ResolvedAt.IsZero() {
		return fmt.Errorf("catalog: publish %s: no resolvedAt: %w", name, ErrInvalidPointer)
	}
	_, ok, err := HasContent(ctx, s, name, p.Digest)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("catalog: publish %s at %s: %w", name, p.Digest, ErrIncomplete)
	}
	key := catalogPrefix(name) + currentFile
	if publishSkipsCAS {
		data, err := pointerData(p)
		if err == nil {
			_, err = s.Put(ctx, key, bytes.NewReader(data))
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		next := p
		cur, etag, err := readPointer(ctx, s, name)
		switch {
		case errors.Is(err, storage.ErrNotExist):
			etag = ""
		case errors.Is(err, ErrCorrupt) && etag != "":
			// Garbage is replaced, under the same swap rules.
		case err != nil:
			return err
		case cur.Digest == p.Digest && cur.Ref == p.Ref:
			if p.VerifiedBy == "" || cur.VerifiedBy == p.VerifiedBy {
				return nil
			}
			next.PublishedAt = cur.PublishedAt
		case cur.ResolvedAt.After(p.ResolvedAt):
			return fmt.Errorf("catalog: publish %s at %s resolved %s: current %s resolved %s: %w",
				name, p.Digest, p.ResolvedAt.Format(time.RFC3339Nano), cur.Digest,
				cur.ResolvedAt.Format(time.RFC3339Nano), ErrStale)
		}
		data, err := pointerData(next)
		if err != nil {
			return fmt.Errorf("catalog: publish %s: %w", name, err)
		}
		_, err = s.PutIf(ctx, key, data, etag)
		if !errors.Is(err, storage.ErrPrecondition) {
			if err != nil {
				return fmt.Errorf("catalog: publish %s: %w", name, err)
			}
			return nil
		}
		// Lost a race: back off a little, randomly, so that publishers
		// retrying together spread out.
		d := time.Duration(rand.Int64N(int64(min(attempt+1, 50)) * int64(time.Millisecond))) //nolint:gosec // G404: jitter, not a secret
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("catalog: publish %s: %w", name, ctx.Err())
		}
	}
}

// Poll is catalogs/<name>/lastpoll: the last time the source was checked,
// recorded whether or not it changed, so a stateless scheduler can tell
// when the catalog is due next.
type Poll struct {
	Time time.Time `json:"time"`
	Ref  string    `json:"ref"`
	// Digest is what Ref resolved to; empty when the poll failed.
	Digest string `json:"digest"`
	// Error describes a failed poll.
	Error string `json:"error,omitempty"`
}

// RecordPoll stores p as name's last poll (a zero Time is set to now).
func RecordPoll(ctx context.Context, s storage.Store, name string, p Poll) error {
	if err := checkName(name); err != nil {
		return err
	}
	if p.Digest != "" {
		if err := checkDigest(p.Digest); err != nil {
			return err
		}
	}
	if p.Time.IsZero() {
		p.Time = time.Now().UTC()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("catalog: poll %s: %w", name, err)
	}
	if _, err := s.Put(ctx, catalogPrefix(name)+pollFile, bytes.NewReader(append(b, '\n'))); err != nil {
		return fmt.Errorf("catalog: poll %s: %w", name, err)
	}
	return nil
}

// LastPoll returns name's last recorded poll; never polled is an error
// wrapping storage.ErrNotExist.
func LastPoll(ctx context.Context, s storage.Store, name string) (Poll, error) {
	if err := checkName(name); err != nil {
		return Poll{}, err
	}
	key := catalogPrefix(name) + pollFile
	b, err := readSmall(ctx, s, key)
	if err != nil {
		return Poll{}, fmt.Errorf("catalog: %s: %w", key, err)
	}
	var p Poll
	if err := json.Unmarshal(b, &p); err != nil {
		return Poll{}, fmt.Errorf("catalog: %s: %w: %v", key, ErrCorrupt, err)
	}
	return p, nil
}

// pointerData is p as stored: JSON and a newline, PublishedAt set to now
// when zero.
func pointerData(p Pointer) ([]byte, error) {
	if p.PublishedAt.IsZero() {
		p.PublishedAt = time.Now().UTC()
	}
	data, err := json.Marshal(p)
	return append(data, '\n'), err
}
