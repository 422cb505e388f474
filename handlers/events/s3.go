package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// PointerFollower hears that an object of a bucket changed (follow.Follower):
// it reads the catalog's pointer again when the key is one, and says why
// not otherwise.
type PointerFollower interface {
	Changed(bucket, key string) error
}

// NotifyConfig configures a bucket notification endpoint.
type NotifyConfig struct {
	// Token, when set, must be sent in the Authorization header as is or
	// as "Bearer <token>" (MinIO's webhook target sends its auth_token
	// so).
	Token string
	// Insecure accepts notifications without a token: anyone who reaches
	// the endpoint can make every pointer be read again (never more).
	// Without Token or Insecure, NewNotifications refuses the
	// configuration.
	Insecure bool
	// MaxBodyBytes caps request bodies (default 1 MiB).
	MaxBodyBytes int64
}

// NotifySource is the source label of the notification endpoint's
// outcomes.
const NotifySource = "s3"

// maxRecords bounds the records of one request that are looked at.
const maxRecords = 1000

// Notifications receives bucket notifications: S3 event records POSTed as
// JSON (MinIO's webhook target, which adds EventName and Key beside
// Records) and the same records as the data of CloudEvents of the
// types IsS3EventType accepts. It answers 204 once the records were
// handed over (also when they name no pointer: a retry would not change
// that), 400 for a body that does not parse, 401/403 without the token.
type Notifications struct {
	cfg     NotifyConfig
	follow  PointerFollower
	opts    options
	notices *webhook.Notices
}

// NewNotifications returns the endpoint, telling f of each changed key.
func NewNotifications(cfg NotifyConfig, f PointerFollower, opts ...Option) (*Notifications, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: notifications need a pointer follower", webhook.ErrConfig)
	}
	if cfg.Token == "" && !cfg.Insecure {
		return nil, fmt.Errorf("%w: notifications: set a token, or accept unauthenticated ones explicitly", webhook.ErrConfig)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = webhook.DefaultMaxBodyBytes
	}
	n := &Notifications{cfg: cfg, follow: f, notices: webhook.NewNotices(0)}
	n.opts.log = slog.New(slog.DiscardHandler)
	for _, fn := range opts {
		fn(&n.opts)
	}
	return n, nil
}

// IsS3EventType reports whether a CloudEvent type carries S3 event
// records: Amazon's (com.amazonaws.s3.*, com.amazon.s3.*) and MinIO's
// (io.minio.*).
func IsS3EventType(t string) bool {
	for _, p := range []string{"com.amazonaws.s3.", "com.amazon.s3.", "io.minio."} {
		if strings.HasPrefix(strings.ToLower(t), p) {
			return true
		}
	}
	return false
}

// s3Record is what is read of one S3 event record.
type s3Record struct {
	S3 *struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key string `json:"key"`
		} `json:"object"`
	} `json:"s3"`
}

// s3Notification is a notification body: records, or one record alone
// (as some CloudEvents carry it).
type s3Notification struct {
	Records []s3Record `json:"Records"`
	s3Record
}

func (n *Notifications) report(outcome string) {
	if n.opts.outcome != nil {
		n.opts.outcome(NotifySource, outcome)
	}
}

// ServeHTTP handles one notification request.
func (n *Notifications) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodHead:
		// MinIO's webhook target checks that the endpoint answers.
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "HEAD, POST")
		http.Error(w, "method not allowed: notifications are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, status, err := webhook.ReadBody(w, r, n.cfg.MaxBodyBytes)
	if err != nil {
		outcome := webhook.OutcomeInvalid
		if status == http.StatusRequestEntityTooLarge {
			outcome = webhook.OutcomeTooLarge
		}
		n.report(outcome)
		http.Error(w, err.Error(), status)
		return
	}
	if n.cfg.Token != "" {
		if err := webhook.AuthenticateHeader(r, "Authorization", n.cfg.Token); err != nil {
			status, outcome := http.StatusForbidden, webhook.OutcomeForbidden
			if errors.Is(err, webhook.ErrUnauthenticated) {
				status, outcome = http.StatusUnauthorized, webhook.OutcomeUnauthorized
			}
			n.report(outcome)
			n.notices.Log(r.Context(), n.opts.log, outcome, "bucket notification refused", "remote", r.RemoteAddr, "err", err)
			http.Error(w, http.StatusText(status), status)
			return
		}
	}
	records, err := n.records(r.Header, body)
	if err != nil {
		n.report(webhook.OutcomeInvalid)
		n.opts.log.Debug("bucket notification rejected", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.hand(r.Context(), records)
	w.WriteHeader(http.StatusNoContent)
}

// records reads the S3 records of a body: plain JSON, or CloudEvents.
func (n *Notifications) records(h http.Header, body []byte) ([]s3Record, error) {
	ct := strings.ToLower(h.Get("Content-Type"))
	if h.Get("Ce-Specversion") == "" && !strings.HasPrefix(ct, "application/cloudevents") {
		var msg s3Notification
		if err := json.Unmarshal(body, &msg); err != nil {
			return nil, fmt.Errorf("%w: not S3 event records: %v", webhook.ErrMalformed, truncateErr(err))
		}
		return msg.all(), nil
	}
	evs, err := webhook.ParseCloudEvents(h, body)
	if err != nil {
		return nil, err
	}
	var out []s3Record
	for _, ev := range evs {
		if !IsS3EventType(ev.Type()) {
			n.report(webhook.OutcomeIgnored)
			continue
		}
		var msg s3Notification
		if err := webhook.DecodeEventData(ev, &msg); err != nil {
			return nil, err
		}
		out = append(out, msg.all()...)
	}
	return out, nil
}

func (m s3Notification) all() []s3Record {
	if m.S3 != nil {
		return append(m.Records, m.s3Record)
	}
	return m.Records
}

// hand tells the follower of each distinct key once, for at most
// maxRecords records.
func (n *Notifications) hand(ctx context.Context, records []s3Record) {
	if len(records) > maxRecords {
		n.notices.Log(ctx, n.opts.log, "too many records", "bucket notification records beyond the limit ignored", "records", len(records), "limit", maxRecords)
		records = records[:maxRecords]
	}
	seen := map[[2]string]bool{}
	for _, rec := range records {
		if rec.S3 == nil {
			n.report(webhook.OutcomeIgnored)
			continue
		}
		// Keys come URL-encoded, as S3 sends them.
		key, err := url.QueryUnescape(rec.S3.Object.Key)
		if err != nil {
			n.report(webhook.OutcomeInvalid)
			continue
		}
		k := [2]string{rec.S3.Bucket.Name, key}
		if seen[k] {
			n.report(webhook.OutcomeDuplicate)
			continue
		}
		seen[k] = true
		if err := n.follow.Changed(k[0], k[1]); err != nil {
			n.report(webhook.OutcomeIgnored)
			n.notices.Log(ctx, n.opts.log, "ignored", "bucket notification ignored", "reason", err)
			continue
		}
		n.report(webhook.OutcomeTriggered)
	}
}

func truncateErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
