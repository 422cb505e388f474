package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// Reason says in one word why a sync failed; status writers and metrics
// use it.
type Reason string

// The reasons a sync fails.
const (
	ReasonInvalidRef      Reason = "InvalidImageRef"
	ReasonRegistry        Reason = "RegistryError"
	ReasonAuth            Reason = "AuthenticationFailed"
	ReasonNotCatalogImage Reason = "NotCatalogImage"
	ReasonMissingLabel    Reason = "MissingCatalogLabel"
	ReasonUnsafeImage     Reason = "UnsafeImage"
	ReasonTooLarge        Reason = "ImageTooLarge"
	ReasonInvalidCatalog  Reason = "InvalidCatalog"
	ReasonStorage         Reason = "StorageError"
	ReasonCanceled        Reason = "Canceled"
	ReasonInternal        Reason = "InternalError"
)

// ErrSync is wrapped by every *Error, so errors.Is(err, ErrSync) tells a
// failed sync from a programming error.
var ErrSync = errors.New("sync failed")

// Error is a failed sync. Retryable errors (network, 5xx, 429, auth,
// storage) are worth another attempt with backoff; terminal ones (a bad
// reference, a digest-pinned image that is not a valid catalog) are not
// until the catalog's spec changes. A refused login (ReasonAuth) is
// retried at the backoff's cap (BackoffToCap).
type Error struct {
	Phase      Phase
	Reason     Reason
	Retryable  bool
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	kind := "terminal"
	if e.Retryable {
		kind = "retryable"
	}
	return fmt.Sprintf("%s (%s, %s): %v", e.Reason, e.Phase, kind, e.Err)
}

func (e *Error) Unwrap() []error { return []error{ErrSync, e.Err} }

// LogValue bounds the error in logs: its text quotes the image (names,
// paths, a registry's answer), which a hostile catalog makes megabytes.
func (e *Error) LogValue() slog.Value {
	return slog.StringValue(truncate.Text(e.Error(), truncate.Log))
}

// BackoffToCap reports whether the next attempt should wait the longest
// backoff at once: refused credentials do not come right by themselves
// within seconds, and retrying them fast may lock the account. A trigger
// (a push, the API) still syncs at once.
func (e *Error) BackoffToCap() bool { return e.Reason == ReasonAuth }

// AsError returns err's *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
