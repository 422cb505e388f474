package events

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// TokenReviewer verifies a bearer token for the configured audience
// (tokenreview.Reviewer asks the Kubernetes TokenReview API). It returns
// the authenticated user's name, or an error wrapping
// webhook.ErrForbidden for a token it rejects; other errors mean it could
// not tell (answered 503, which Knative retries).
type TokenReviewer interface {
	Review(ctx context.Context, token string) (string, error)
}

// WithTokenReviewer sets the verifier of OIDC sender tokens; Config.Audience
// needs one.
func WithTokenReviewer(tr TokenReviewer) Option { return func(o *options) { o.reviewer = tr } }

// checkAuthConfig refuses a configuration that would accept anyone
// without saying so.
func checkAuthConfig(cfg Config, tr TokenReviewer) error {
	switch {
	case cfg.Audience != "" && tr == nil:
		return fmt.Errorf("%w: events.audience needs a TokenReview client (a cluster to ask)", webhook.ErrConfig)
	case cfg.Token == "" && cfg.Audience == "" && !cfg.Insecure:
		return fmt.Errorf("%w: events: set token or audience, or insecure: true to accept unauthenticated events", webhook.ErrConfig)
	}
	return nil
}

// authorized authenticates r, answering it when it is refused.
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	err := h.authenticate(r)
	if err == nil {
		return true
	}
	status, outcome := http.StatusForbidden, webhook.OutcomeForbidden
	switch {
	case errors.Is(err, webhook.ErrUnauthenticated):
		status, outcome = http.StatusUnauthorized, webhook.OutcomeUnauthorized
	case !errors.Is(err, webhook.ErrForbidden):
		// The reviewer could not tell: a retry may succeed.
		status, outcome = http.StatusServiceUnavailable, webhook.OutcomeUnauthorized
		w.Header().Set("Retry-After", "5")
	}
	h.report(outcome)
	h.log.Warn("cloudevent authentication failed", "remote", r.RemoteAddr, "err", err)
	http.Error(w, http.StatusText(status), status)
	return false
}

// authenticate accepts the static token or, with an audience, a token the
// reviewer accepts. The token itself is never logged or returned.
func (h *Handler) authenticate(r *http.Request) error {
	if h.cfg.Token == "" && h.cfg.Audience == "" {
		return nil // Insecure, checked by New
	}
	var err error
	if h.cfg.Token != "" {
		if err = webhook.AuthenticateHeader(r, h.cfg.Header, h.cfg.Token); err == nil {
			return nil
		}
	}
	if h.cfg.Audience == "" {
		return err
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: no bearer token", webhook.ErrUnauthenticated)
	}
	user, err := h.reviewer.Review(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return err
	}
	h.log.Debug("cloudevent sender authenticated", "user", user)
	return nil
}
