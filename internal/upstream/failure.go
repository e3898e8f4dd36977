package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream answers is not ours to show. A URL registered through
// the admin API may point at any service the gateway can reach, and the
// errors of the HTTP client and the SDK quote what they got: a NATS
// banner with its version and server id, an HTML error page, the socket
// address a host name resolved to ("dial tcp 10.0.0.7:4222: connect:
// connection refused"). Every failure of an exchange with an upstream is
// therefore described in words of ours — a failure — and only those reach
// lastError, a client's error message and the log. The original error is
// kept for errors.Is (timeouts, cancellation), never printed.

// Kinds of failure the manager acts on; none of them is worth a retry.
var (
	// errLoop: the upstream is this deployment, or its answers come
	// through it (see loop.go). Its tools are dropped at once, without a
	// grace period.
	errLoop = errors.New("federation loop")
	// errDenied: the address is in federation.deniedNetworks.
	errDenied = errors.New("denied network")
	// errLimit: a federation limit was exceeded (tools per upstream,
	// tool-list bytes).
	errLimit = errors.New("federation limit exceeded")
)

// failure is a classified reason an exchange with an upstream failed. Its
// message never quotes the peer's bytes or a socket address.
type failure struct {
	kind  error // errLoop, errDenied, errLimit, or nil
	msg   string
	cause error // never printed
}

func (f *failure) Error() string { return f.msg }

func (f *failure) Unwrap() []error {
	var out []error
	if f.kind != nil {
		out = append(out, f.kind)
	}
	if f.cause != nil {
		out = append(out, f.cause)
	}
	return out
}

// final reports a failure that repeating the request would only repeat.
func (f *failure) final() bool { return f.kind != nil }

func failed(msg string, cause error) *failure { return &failure{msg: msg, cause: cause} }

// transportFailure classifies an error of the HTTP round trip (dialing,
// TLS, reading the response's head or body).
func transportFailure(err error) *failure {
	var (
		denied    *deniedError
		dns       *net.DNSError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &denied):
		return &failure{kind: errDenied, msg: "connection denied: " + denied.Error(), cause: err}
	case errors.As(err, &dns):
		switch {
		case dns.IsNotFound:
			return failed("DNS lookup of the host failed: no such host", err)
		case dns.IsTimeout:
			return failed("DNS lookup of the host timed out", err)
		}
		return failed("DNS lookup of the host failed", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return failed("connection refused", err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failed("the server closed the connection", err)
	case errors.Is(err, syscall.EHOSTUNREACH):
		return failed("host unreachable", err)
	case errors.Is(err, syscall.ENETUNREACH):
		return failed("network unreachable", err)
	case errors.As(err, &unknownCA):
		return failed("TLS: the server's certificate is signed by an unknown authority", err)
	case errors.As(err, &hostname):
		return failed("TLS: the server's certificate is not valid for its host name", err)
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return failed("TLS: the server's certificate has expired or is not yet valid", err)
		}
		return failed("TLS: the server's certificate is not valid", err)
	case errors.As(err, &verify):
		return failed("TLS: the server's certificate could not be verified", err)
	case errors.As(err, &record):
		if string(record.RecordHeader[:]) == "HTTP/" {
			return failed("TLS: the server answers plain HTTP", err)
		}
		return failed("TLS: the server does not speak TLS", err)
	case errors.As(err, &alert):
		return failed("TLS: the server refused the handshake", err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return failed("timed out", err)
	}
	// net/http reports these with fixed texts of its own, as plain
	// errors; the texts may go on to quote the peer, which is why only
	// their beginnings are matched and none of it is kept.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed HTTP"), strings.Contains(msg, "malformed MIME"):
		return failed("not an MCP server: the answer is not HTTP", err)
	case strings.Contains(msg, "response headers exceeded"):
		return failed("not an MCP server: the answer's headers are too large", err)
	case strings.HasPrefix(msg, "tls: "):
		return failed("TLS handshake failed", err)
	}
	return failed("the connection failed", err)
}

// statusFailure classifies an answer whose status is not 2xx.
func statusFailure(code int, hadSession bool) *failure {
	status := fmt.Sprintf("HTTP %d", code)
	if text := http.StatusText(code); text != "" {
		status += " (" + text + ")"
	}
	switch {
	case code == http.StatusLoopDetected:
		return &failure{kind: errLoop, msg: "loop: the upstream is this deployment (it refused the request as one that has passed through it already: " + status + ")"}
	case code == http.StatusNotFound && hadSession:
		return failed("the server no longer knows the session: "+status, nil)
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		return failed("the server refused the credentials: "+status, nil)
	case code == http.StatusTooManyRequests:
		return failed("the server is limiting requests: "+status, nil)
	case code >= 500:
		return failed("the server failed: "+status, nil)
	}
	return failed("not an MCP endpoint: "+status, nil)
}

// loopFailure: the upstream's answer names this deployment among those
// behind it.
func loopFailure() *failure {
	return &failure{kind: errLoop, msg: "loop: the upstream's answers come through this deployment (its " + HeaderDeployments +
		" header names this deployment): it federates this server, directly or through others"}
}

// wireFailure describes a JSON-RPC error answer. A server that has not
// completed the initialize handshake has not shown it is an MCP server,
// so of its answer only the code is shown; an MCP server's own message
// about its tools is shown, bounded and with control characters removed.
func wireFailure(w *jsonrpc.Error, initialized bool) *failure {
	if !initialized {
		return &failure{msg: fmt.Sprintf("not an MCP server: it answered initialize with JSON-RPC error %d", w.Code), cause: w}
	}
	return &failure{msg: fmt.Sprintf("JSON-RPC error %d: %s", w.Code, peerText(w.Message, maxPeerText)), cause: w}
}

// maxPeerText bounds the part of a message an MCP server wrote that is
// shown.
const maxPeerText = 200

// peerText is s cut to at most n bytes (on a character boundary), with
// control characters and invalid UTF-8 replaced by spaces, so a message
// cannot forge log lines or carry a page.
func peerText(s string, n int) string {
	var b strings.Builder
	for i, r := range s {
		if i >= n {
			b.WriteString("...")
			break
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}

// otherFailure classifies what is left once the transport had nothing to
// say: the SDK's own errors, which quote what they could not parse.
func otherFailure(err error, initialized bool) *failure {
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &wire):
		return wireFailure(wire, initialized)
	case errors.Is(err, context.Canceled):
		return failed("the request was cancelled", err)
	case errors.Is(err, mcp.ErrConnectionClosed):
		return failed("the connection to the server was closed", err)
	case !initialized:
		return failed("not an MCP server: its answer to initialize is not valid MCP", err)
	}
	return failed("protocol error: the server's answer is not valid MCP", err)
}

// exchange is what the HTTP layer learns during one operation on a
// session (connecting, one walk of the tool list, one call), reached
// through the operation's context. The SDK turns most failures into its
// own errors, some without their cause, and reads answers on goroutines
// of its own; the transport records here what went wrong, so the
// operation can say it in its own words.
type exchange struct {
	// call marks a tool call, which does not announce this deployment
	// (HeaderVia).
	call bool

	mu     sync.Mutex
	failed *failure

	// A budget bounds the bytes of all the operation's answers together
	// (a tool list over many pages): left counts down from it, and the
	// first answer that goes over ends the operation through cancel.
	// sent is set once a tool call's request may have reached the server
	// (see mayHaveArrived).
	sent atomic.Bool

	budget int64 // 0: none
	left   atomic.Int64
	what   string // "tool list", for the message
	cancel context.CancelFunc
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// withBudget makes ex bound the operation's answers to budget bytes in
// all; cancel ends the operation when they go over.
func (ex *exchange) withBudget(budget int64, what string, cancel context.CancelFunc) *exchange {
	ex.budget, ex.what, ex.cancel = budget, what, cancel
	ex.left.Store(budget)
	return ex
}

// begin starts a request of the operation: what the last one went
// through (the SDK's server/discover probe, refused before its
// initialize fallback) no longer says why the operation fails, unless it
// was final.
func (ex *exchange) begin() {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.failed != nil && !ex.failed.final() {
		ex.failed = nil
	}
}

// record notes f as why the current request failed; a final failure
// recorded before stays.
func (ex *exchange) record(f *failure) {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.failed == nil || !ex.failed.final() {
		ex.failed = f
	}
}

func (ex *exchange) failure() *failure {
	if ex == nil {
		return nil
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.failed
}

// overBudget records that the answers went over the budget and ends the
// operation: nothing more is read.
func (ex *exchange) overBudget() error {
	f := &failure{kind: errLimit, msg: fmt.Sprintf("the %s is larger than %d bytes (federation.maxToolListBytes)", ex.what, ex.budget)}
	ex.record(f)
	ex.cancel()
	return f
}

// probe is what the transport learned about a session as a whole.
type probe struct {
	// last is the last failure of any request of the session, the
	// standalone stream's included: why a session ended by itself.
	last atomic.Pointer[failure]
	// seen is the server's last HeaderDeployments.
	seen atomic.Pointer[deployments]
}

// deployments is a HeaderDeployments value as received and as parsed.
type deployments struct {
	raw  string
	from string   // the answering deployment
	ids  []string // every one named, from included
}

// ids returns the deployments the server's last answer named (nil: it
// named none, so it is no mcp-runtime deployment or an older one).
func (p *probe) ids() []string {
	if d := p.seen.Load(); d != nil {
		return d.ids
	}
	return nil
}

// connectionLost says why the session ended by itself.
func (p *probe) connectionLost() error {
	if f := p.last.Load(); f != nil {
		return &failure{kind: f.kind, msg: "connection lost: " + f.msg}
	}
	return failed("connection lost: the server ended the session", nil)
}

// reasonOf is why err failed, in the words of this file: the classified
// failure, never the peer's bytes or socket addresses.
func reasonOf(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.msg
	}
	var e *Error
	if errors.As(err, &e) && e.Timeout {
		return "timed out"
	}
	return "the connection failed"
}

// beforeSend reports whether err, from a round trip, means the request
// never left: the connection could not be made (refused, unreachable, no
// such host, a denied address) or its TLS handshake failed. Anything else
// — a timeout, a reset, an answer cut short — may have come after the
// server read the request.
func beforeSend(err error) bool {
	var (
		op        *net.OpError
		dns       *net.DNSError
		denied    *deniedError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &op) && op.Op == "dial",
		errors.As(err, &dns), errors.As(err, &denied),
		errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &record):
		return true
	}
	return false
}
