package pipeline

import (
	"errors"
	"fmt"
	"time"
)

// Reasons say in one word why a sync failed; status writers use them.
const (
	ReasonInvalidRef      = "InvalidImageRef"
	ReasonRegistry        = "RegistryError"
	ReasonNotCatalogImage = "NotCatalogImage"
	ReasonMissingLabel    = "MissingCatalogLabel"
	ReasonUnsafeImage     = "UnsafeImage"
	ReasonTooLarge        = "ImageTooLarge"
	ReasonInvalidCatalog  = "InvalidCatalog"
	ReasonStorage         = "StorageError"
	ReasonCanceled        = "Canceled"
	ReasonInternal        = "InternalError"
)

// ErrSync is wrapped by every *Error, so errors.Is(err, ErrSync) tells a
// failed sync from a programming error.
var ErrSync = errors.New("sync failed")

// Error is a failed sync. Retryable errors (network, 5xx, 429, auth,
// storage) are worth another attempt with backoff; terminal ones (a bad
// reference, a digest-pinned image that is not a valid catalog) are not
// until the catalog's spec changes.
type Error struct {
	Phase      Phase
	Reason     string
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

// AsError returns err's *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
