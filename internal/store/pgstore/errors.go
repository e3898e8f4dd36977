package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// unavailableError is a failure to reach the database. Its text is fixed
// because the driver's (the cause) can name the host, port or database,
// and store errors may be shown to clients. The cause stays in the chain
// (errors.Is, errors.As, errors.Unwrap) for code that logs it.
type unavailableError struct{ cause error }

func (e *unavailableError) Error() string { return "the database is unavailable" }

func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.cause} }

// SQLSTATE codes we act on.
const (
	codeUniqueViolation = "23505"
	codeQueryCanceled   = "57014" // statement_timeout
	codeAdminShutdown   = "57P01"
	codeCrashShutdown   = "57P02"
	codeCannotConnect   = "57P03"
	codeTooManyConns    = "53300"
)

// statementError is PostgreSQL refusing a statement for a reason other
// than an outage: a bug in a query, a constraint we did not expect, a
// value it cannot hold. Its text is the class of the failure (SQLSTATE,
// table, constraint), never the server's message or detail: those quote
// the offending input (part of a value, a memory key), and this error is
// what the operator's log shows of an internal failure. The cause stays
// in the chain (errors.As finds the *pgconn.PgError) for code that needs
// more.
type statementError struct {
	pg    *pgconn.PgError
	cause error
}

func (e *statementError) Error() string {
	msg := "PostgreSQL refused the statement: SQLSTATE " + e.pg.Code
	if e.pg.TableName != "" {
		msg += " on table " + e.pg.TableName
	}
	if e.pg.ConstraintName != "" {
		msg += ", constraint " + e.pg.ConstraintName
	}
	return msg
}

func (e *statementError) Unwrap() error { return e.cause }

// classify turns a driver error into the store's vocabulary: anything that
// means "the database did not answer" becomes ErrUnavailable, so callers
// can retry and the tool layer can say so without leaking the DSN; a
// statement PostgreSQL refused becomes a statementError, which says why
// without quoting the input. Other errors (ours, or the driver's about
// types and columns) pass through unchanged. All but ErrUnavailable
// surface as internal failures.
func classify(err error) error {
	var pgErr *pgconn.PgError
	var done *statementError
	switch {
	case err == nil, errors.Is(err, store.ErrUnavailable):
		return err
	case isUnavailable(err):
		return &unavailableError{cause: err}
	case errors.As(err, &pgErr) && !errors.As(err, &done):
		return &statementError{pg: pgErr, cause: err}
	}
	return err
}

func isUnavailable(err error) bool {
	if errors.Is(err, store.ErrUnavailable) {
		return false // already classified
	}
	// A caller that gave up is not a database outage; its own context
	// error says what happened.
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeQueryCanceled, codeAdminShutdown, codeCrashShutdown, codeCannotConnect, codeTooManyConns:
			return true
		}
		return len(pgErr.Code) == 5 && pgErr.Code[:2] == "08" // connection exception class
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The server closed the connection mid-conversation.
		return true
	case errors.Is(err, puddle.ErrClosedPool):
		return true
	}
	// pgconn marks errors that happened before anything reached the
	// server (a connection found closed, a failed dial) as safe to retry;
	// they are all about the connection, not the statement.
	return pgconn.SafeToRetry(err)
}

// startupErr is classify for the errors of Open and Migrate. They go to
// the operator (the start-up log), not to a client, and "the database is
// unavailable" alone would hide whether the host was wrong, the server
// down or the lock held; so the cause's text stays in the message.
func startupErr(err error) error {
	if err == nil || !isUnavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation
}

// fail adds what was being done to a database error. Errors of the
// store's own kinds already carry a message meant for the client (and
// a FieldError must stay unwrapped for errors.As to be cheap to read), so
// they pass through unchanged.
func fail(op string, err error) error {
	var fe *store.FieldError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict),
		errors.Is(err, store.ErrAlreadyExists), errors.As(err, &fe):
		return err
	}
	return fmt.Errorf("%s: %w", op, classify(err))
}
