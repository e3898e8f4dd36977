package store

import (
	"errors"
	"fmt"
)

// The kinds of failure a caller can act on. Implementations wrap them
// with a message a client may read ("session 0193… is completed"), so the
// message must never carry a DSN, a host or a query.
var (
	// ErrNotFound: the entity does not exist for this tenant (or has
	// expired).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the entity's state forbids the change — a version that
	// no longer matches (ifVersion), a session that is no longer active,
	// a full session, an initiator leaving an active session.
	ErrConflict = errors.New("conflict")
	// ErrAlreadyExists: creating an entity whose identifier is taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrUnavailable: the backing database cannot be reached or did not
	// answer in time; the call may be retried.
	ErrUnavailable = errors.New("store unavailable")
)

// FieldError reports an invalid input field; Field is the argument's name
// as the client wrote it (namespace, key, value, tags[2], …).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Invalid returns a *FieldError.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// NotFoundf wraps ErrNotFound with a message.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotFound)
}

// Conflictf wraps ErrConflict with a message.
func Conflictf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrConflict)
}

// AlreadyExistsf wraps ErrAlreadyExists with a message.
func AlreadyExistsf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrAlreadyExists)
}
