package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// DefaultJWKSRefreshInterval is the least time between two fetches of a
// remote key set: a token naming a key the set lacks (a rotation, or a
// forgery) fetches it again at most this often.
const DefaultJWKSRefreshInterval = time.Minute

// maxJWKSBytes bounds a key set answer: Google's holds two or three keys
// in about 2 KiB.
const maxJWKSBytes = 1 << 20

// ErrUnknownKey is a token signed with a key the key set does not hold.
var ErrUnknownKey = errors.New("no such key in the key set")

// remoteKeySet verifies with the keys of a JWKS URL. It fetches them at
// first use and again when a token names a key id it does not hold, but
// at most once per interval and one fetch at a time, so forged tokens
// cannot make it fetch more (go-oidc's RemoteKeySet fetches on every
// unknown key id).
type remoteKeySet struct {
	url      string
	client   *http.Client
	algs     []jose.SignatureAlgorithm
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time // when the last fetch started; zero before the first
	lastErr error     // how the last fetch failed, nil when it did not
	flight  singleflight.Group
}

func (r *remoteKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, r.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("malformed token: %d signatures", len(jws.Signatures))
	}
	kid := jws.Signatures[0].Header.KeyID
	if p, found, err := verifyWithKeys(jws, r.cached(), kid); found {
		return p, err
	}
	if err := r.refresh(ctx); err != nil {
		return nil, err
	}
	if p, found, err := verifyWithKeys(jws, r.cached(), kid); found {
		return p, err
	}
	return nil, fmt.Errorf("%w: key id %.64q", ErrUnknownKey, kid)
}

// verifyWithKeys verifies jws with the keys of id kid (every key when kid
// is empty); found says whether any such key was there to try.
func verifyWithKeys(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, found bool, err error) {
	err = errors.New("failed to verify token signature")
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		found = true
		if p, verr := jws.Verify(&keys[i]); verr == nil {
			return p, true, nil
		}
	}
	if kid == "" && found {
		// No key id: any key may have signed it, and a rotation may
		// have brought the one that did.
		return nil, false, err
	}
	return nil, found, err
}

func (r *remoteKeySet) cached() []jose.JSONWebKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys
}

// refresh fetches the key set unless a fetch started less than interval
// ago; concurrent callers share one fetch.
func (r *remoteKeySet) refresh(ctx context.Context) error {
	_, err, _ := r.flight.Do("", func() (any, error) {
		r.mu.Lock()
		if !r.fetched.IsZero() && r.now().Sub(r.fetched) < r.interval {
			r.mu.Unlock()
			return nil, nil
		}
		r.fetched = r.now()
		r.mu.Unlock()
		// The fetch serves every waiting request: one leaving must not
		// end it (the client's timeout does).
		keys, err := r.fetch(context.WithoutCancel(ctx))
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.lastErr = err; err == nil {
			r.keys = keys
		}
		return nil, err
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) == 0 && r.lastErr != nil {
		// No keys yet and no fetch allowed before the interval ends.
		return r.lastErr
	}
	return nil
}

func (r *remoteKeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks %s: answered %d", r.url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", r.url, err)
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks %s: larger than %d bytes", r.url, maxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jwks %s: %v", r.url, err)
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("jwks %s: no public signing keys", r.url)
	}
	return keys, nil
}
