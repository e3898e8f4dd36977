package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// internalDetail is all a client learns of an unexpected failure; the cause
// is in the log only, since it may name hosts or paths of the deployment.
const internalDetail = "internal error; the cause is in the server log"

// statusClientClosed is nginx's 499: logged and counted as a client-side
// end, never as a 5xx. No client sees it.
const statusClientClosed = 499

// Problem is an RFC 9457 problem details object. Type is always
// "about:blank", so Title is the status's reason phrase (RFC 9457 §4.2.1)
// and Detail says what went wrong. Field names the offending JSON field or
// query parameter of a 400.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

// requestError is a client error found before the Upstreams were called.
type requestError struct {
	status int
	detail string
	field  string
}

func (e *requestError) Error() string { return e.detail }

func badRequest(field, format string, args ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, detail: fmt.Sprintf(format, args...), field: field}
}

// problem writes a problem response.
func (a *API) problem(w http.ResponseWriter, _ *http.Request, status int, detail, field string) {
	body, err := json.Marshal(Problem{
		Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Field: field,
	})
	if err != nil {
		// A struct of strings and an int always encodes; keep the status.
		w.WriteHeader(status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do about it
}

// fail answers err, which came from decoding the request or from the
// Upstreams for the server id (empty for routes without one).
func (a *API) fail(w http.ResponseWriter, r *http.Request, id string, err error) {
	var rerr *requestError
	var ferr *upstream.FieldError
	switch {
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away: nobody reads an answer, and it is no
		// server failure worth an error in the log.
		a.log.Debug().Str("method", logging.Field(r.Method)).Str("path", logging.Field(r.URL.Path)).Msg("admin: client gone before the answer")
		a.problem(w, r, statusClientClosed, "the request was cancelled", "")
	case errors.As(err, &rerr):
		a.problem(w, r, rerr.status, rerr.detail, rerr.field)
	case errors.As(err, &ferr):
		// Reasons never quote header values, only names and sizes.
		a.problem(w, r, http.StatusBadRequest, ferr.Error(), ferr.Field)
	case errors.Is(err, upstream.ErrNotFound):
		a.problem(w, r, http.StatusNotFound, fmt.Sprintf("no upstream server with id %q", id), "")
	case errors.Is(err, upstream.ErrExists):
		a.problem(w, r, http.StatusConflict, fmt.Sprintf("an upstream server with id %q already exists", id), "id")
	case errors.Is(err, upstream.ErrReadOnly):
		a.problem(w, r, http.StatusConflict, fmt.Sprintf(
			"upstream server %q is declared in the configuration file and cannot be changed through the API; change the file instead", id), "")
	case errors.Is(err, upstream.ErrConflict):
		a.problem(w, r, http.StatusConflict, fmt.Sprintf("upstream server %q was changed by another request meanwhile; read it and try again", id), "")
	case errors.Is(err, upstream.ErrDisabled):
		a.problem(w, r, http.StatusConflict, fmt.Sprintf("upstream server %q is disabled; enable it first", id), "")
	case errors.Is(err, upstream.ErrConnectionTimeout):
		// The upstream's failure, not ours: a gateway status, and the
		// cause (which may carry its URL) in the log only.
		a.log.Warn().Err(err).Str("upstream", id).Str("path", logging.Field(r.URL.Path)).Msg("admin: upstream timed out")
		a.problem(w, r, http.StatusGatewayTimeout, fmt.Sprintf("upstream server %q did not answer in time; see lastError in its status", id), "")
	case errors.Is(err, upstream.ErrInvocationFailed):
		a.log.Warn().Err(err).Str("upstream", id).Str("path", logging.Field(r.URL.Path)).Msg("admin: upstream request failed")
		a.problem(w, r, http.StatusBadGateway, fmt.Sprintf("upstream server %q failed; see lastError in its status", id), "")
	default:
		a.log.Error().Err(err).Str("method", logging.Field(r.Method)).Str("path", logging.Field(r.URL.Path)).Msg("admin request failed")
		a.problem(w, r, http.StatusInternalServerError, internalDetail, "")
	}
}
