package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	contentTypeJSON       = "application/json"
	contentTypeSSE        = "text/event-stream"
	// maxBody bounds a JSON response body.
	maxBody = 16 << 20
	// initializeID is the JSON-RPC id of the initialize request; workers
	// number their requests from firstWorkerID on.
	initializeID  = 1
	firstWorkerID = 2
)

// errKind classifies a failed call.
type errKind int

const (
	kindHTTP      errKind = iota // non-2xx HTTP status
	kindJSONRPC                  // JSON-RPC error response
	kindTool                     // tools/call result with isError: true
	kindTransport                // connection failure, timeout, broken body
	kindProtocol                 // malformed or missing JSON-RPC response
	numKinds
)

func (k errKind) String() string {
	switch k {
	case kindHTTP:
		return "http"
	case kindJSONRPC:
		return "jsonrpc"
	case kindTool:
		return "tool"
	case kindTransport:
		return "transport"
	case kindProtocol:
		return "protocol"
	}
	return "unknown"
}

// callError is the error of one failed exchange, with its kind.
type callError struct {
	kind errKind
	msg  string
	err  error // underlying cause, if any
}

func (e *callError) Error() string {
	if e.err != nil {
		return e.kind.String() + ": " + e.msg + ": " + e.err.Error()
	}
	return e.kind.String() + ": " + e.msg
}

func (e *callError) Unwrap() error { return e.err }

func newCallError(kind errKind, msg string, err error) *callError {
	return &callError{kind: kind, msg: msg, err: err}
}

// rpcEnvelope receives a JSON-RPC message. Its RawMessage fields reuse their
// backing arrays across decodes, so a reused envelope costs no allocation.
type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (e *rpcEnvelope) reset() {
	e.ID = e.ID[:0]
	e.Method = e.Method[:0]
	e.Result = e.Result[:0]
	e.Error = e.Error[:0]
}

// isResponseTo reports whether the message is a response (not a request or
// notification) whose id equals id.
func (e *rpcEnvelope) isResponseTo(id []byte) bool {
	if len(e.Method) > 0 || (len(e.Result) == 0 && len(e.Error) == 0) {
		return false
	}
	got := bytes.TrimSpace(e.ID)
	if bytes.Equal(got, id) {
		return true
	}
	// Tolerate an equivalent number spelled differently (e.g. 7.0).
	a, err1 := strconv.ParseFloat(string(got), 64)
	b, err2 := strconv.ParseFloat(string(id), 64)
	return err1 == nil && err2 == nil && a == b
}

// rpcErrorMessage renders a JSON-RPC error object for error samples.
func rpcErrorMessage(raw json.RawMessage) string {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return truncate(string(raw), 200)
	}
	return fmt.Sprintf("code %d: %s", e.Code, e.Message)
}

// toolErrorMessage extracts the first text block of an isError result.
func toolErrorMessage(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err == nil {
		for _, c := range r.Content {
			if c.Type == "text" {
				return truncate(c.Text, 200)
			}
		}
	}
	return truncate(string(raw), 200)
}

// resultIsError reports whether a tools/call result has isError: true. The
// substring test keeps the common (successful) path free of a second decode.
func resultIsError(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// newHTTPClient returns the one client shared by every session and worker,
// tuned so that each worker keeps its own HTTP/1.1 keep-alive connection.
func newHTTPClient(concurrency int) *http.Client {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	tr := &http.Transport{
		Proxy: nil, // a load test targets the server directly
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          2*concurrency + 16,
		MaxIdleConnsPerHost:   concurrency + 16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		Protocols:             &protocols,
	}
	return &http.Client{
		Transport: tr,
		// MCP endpoints do not redirect; following one would hide a
		// misconfigured URL behind extra round trips.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// conn performs JSON-RPC exchanges over Streamable HTTP. It owns reusable
// parse buffers, so it must not be used concurrently: each worker has one.
type conn struct {
	hc      *http.Client
	url     string
	timeout time.Duration
	buf     bytes.Buffer
	sse     *sseParser
	env     rpcEnvelope
	// matchedAt is when the matching response was decoded, before the rest
	// of the body is drained: the latency a client observes.
	matchedAt time.Time
}

func newConn(hc *http.Client, url string, timeout time.Duration) *conn {
	return &conn{hc: hc, url: url, timeout: timeout, sse: newSSEParser(http.NoBody)}
}

// call POSTs one JSON-RPC request and returns the envelope of the matching
// response (valid until the next call) and the response headers. A JSON-RPC
// error response is returned as an envelope with Error set, not as an error.
// The returned error is always a *callError.
func (c *conn) call(ctx context.Context, header http.Header, body, id []byte) (*rpcEnvelope, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.post(ctx, header, body)
	if err != nil {
		return nil, nil, err
	}
	defer drainClose(resp.Body)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, httpStatusError(resp)
	}
	var env *rpcEnvelope
	switch mt := mediaType(resp.Header); {
	case strings.EqualFold(mt, contentTypeJSON):
		env, err = c.readJSON(resp.Body, id)
	case strings.EqualFold(mt, contentTypeSSE):
		env, err = c.readSSE(resp.Body, id)
	default:
		err = newCallError(kindProtocol,
			fmt.Sprintf("status %d with unexpected Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type")), nil)
	}
	if err != nil {
		return nil, nil, err
	}
	return env, resp.Header, nil
}

// mediaType returns the Content-Type without parameters, without allocating.
func mediaType(h http.Header) string {
	mt := h.Get("Content-Type")
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.TrimSpace(mt)
}

// notify POSTs a JSON-RPC notification and returns the HTTP status.
func (c *conn) notify(ctx context.Context, header http.Header, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.post(ctx, header, body)
	if err != nil {
		return 0, err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, httpStatusError(resp)
	}
	return resp.StatusCode, nil
}

// delete ends a session. 405 (the server does not support explicit
// termination) counts as success.
func (c *conn) delete(ctx context.Context, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return fmt.Errorf("build DELETE request: %w", err)
	}
	req.Header = header
	resp, err := c.hc.Do(req)
	if err != nil {
		return newCallError(kindTransport, "DELETE", err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode == http.StatusMethodNotAllowed || (resp.StatusCode >= 200 && resp.StatusCode <= 299) {
		return nil
	}
	return httpStatusError(resp)
}

func (c *conn) post(ctx context.Context, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, newCallError(kindTransport, "build request", err)
	}
	// The header map is shared and read-only: neither http.Client (without
	// a cookie jar or URL credentials) nor the Transport modifies it.
	req.Header = header
	resp, err := c.hc.Do(req)
	if err != nil {
		msg := "POST"
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "POST timed out"
		}
		return nil, newCallError(kindTransport, msg, err)
	}
	return resp, nil
}

func (c *conn) readJSON(body io.Reader, id []byte) (*rpcEnvelope, error) {
	c.buf.Reset()
	n, err := c.buf.ReadFrom(io.LimitReader(body, maxBody+1))
	if err != nil {
		return nil, newCallError(kindTransport, "read JSON body", err)
	}
	if n > maxBody {
		return nil, newCallError(kindProtocol, "JSON body exceeds 16 MiB", nil)
	}
	c.env.reset()
	if err := json.Unmarshal(c.buf.Bytes(), &c.env); err != nil {
		return nil, newCallError(kindProtocol, "decode JSON body: "+truncate(c.buf.String(), 120), err)
	}
	if !c.env.isResponseTo(id) {
		return nil, newCallError(kindProtocol,
			fmt.Sprintf("JSON body is not the response to id %s: %s", id, truncate(c.buf.String(), 120)), nil)
	}
	c.matchedAt = time.Now()
	return &c.env, nil
}

// readSSE reads events until the response whose id matches arrives.
// Notifications, server-to-client requests, comments and events without
// data are skipped.
func (c *conn) readSSE(body io.Reader, id []byte) (*rpcEnvelope, error) {
	c.sse.reset(body)
	defer c.sse.reset(http.NoBody) // do not keep the body reachable
	for {
		ev, err := c.sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, newCallError(kindProtocol, "SSE stream ended before the response", nil)
			}
			if errors.Is(err, errSSETooLarge) {
				return nil, newCallError(kindProtocol, "read SSE stream", err)
			}
			return nil, newCallError(kindTransport, "read SSE stream", err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue // e.g. a priming event that only carries an id
		}
		if len(ev.Type) > 0 && string(ev.Type) != "message" {
			continue
		}
		c.env.reset()
		if err := json.Unmarshal(data, &c.env); err != nil {
			return nil, newCallError(kindProtocol, "decode SSE data: "+truncate(string(data), 120), err)
		}
		if c.env.isResponseTo(id) {
			c.matchedAt = time.Now()
			return &c.env, nil
		}
	}
}

func httpStatusError(resp *http.Response) *callError {
	var snippet [256]byte
	n, _ := io.ReadFull(resp.Body, snippet[:])
	msg := "status " + strconv.Itoa(resp.StatusCode)
	if s := strings.TrimSpace(string(snippet[:n])); s != "" {
		msg += ": " + s
	}
	return newCallError(kindHTTP, msg, nil)
}

// drainClose reads what is left of a body so that the keep-alive connection
// can be reused, then closes it. The read is bounded by the request context.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxBody))
	_ = body.Close()
}

// session is one handshaken MCP client session.
type session struct {
	url     string // the endpoint it was made at, where its requests go
	id      string // Mcp-Session-Id, empty for a stateless server
	version string // negotiated protocol version
	server  string // serverInfo name/version, for display
	// meta is the _meta every request of the stateless era (2026-07-28
	// and later) carries; nil in a session's era.
	meta   json.RawMessage
	header http.Header // read-only request headers for this session
}

// baseHeader returns the headers every POST carries, with user headers
// applied last so they can override the defaults.
func baseHeader(user http.Header) http.Header {
	h := make(http.Header, 4+len(user))
	h.Set("Accept", contentTypeJSON+", "+contentTypeSSE)
	h.Set("Content-Type", contentTypeJSON)
	for k, vs := range user {
		h[k] = append([]string(nil), vs...)
	}
	return h
}

type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

// handshake runs initialize + notifications/initialized and returns the
// session; in the stateless era it runs server/discover instead. warn
// receives non-fatal deviations from the spec.
func handshake(ctx context.Context, c *conn, user http.Header, protocolVersion, clientVersion string, warn func(string)) (*session, error) {
	if isModern(protocolVersion) {
		return discover(ctx, c, user, protocolVersion, clientVersion)
	}
	params := map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpload", "version": clientVersion},
	}
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": initializeID, "method": "initialize", "params": params,
	})
	if err != nil {
		return nil, fmt.Errorf("encode initialize: %w", err)
	}
	// No MCP-Protocol-Version header yet: it is only defined once negotiated.
	header := baseHeader(user)

	env, respHeader, err := c.call(ctx, header, body, []byte(strconv.Itoa(initializeID)))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	sessionID := respHeader.Get(headerSessionID)
	if len(env.Error) > 0 {
		return nil, fmt.Errorf("initialize: JSON-RPC error %s", rpcErrorMessage(env.Error))
	}
	var res initializeResult
	if err := json.Unmarshal(env.Result, &res); err != nil {
		return nil, fmt.Errorf("initialize: decode result: %w", err)
	}
	if res.ProtocolVersion == "" {
		return nil, errors.New("initialize: result has no protocolVersion")
	}
	if res.ProtocolVersion != protocolVersion {
		warn(fmt.Sprintf("server negotiated protocol version %s (requested %s)", res.ProtocolVersion, protocolVersion))
	}

	s := &session{url: c.url, id: sessionID, version: res.ProtocolVersion, server: res.ServerInfo.Name + " " + res.ServerInfo.Version}
	s.header = baseHeader(user)
	s.header.Set(headerProtocolVersion, res.ProtocolVersion)
	if sessionID != "" {
		s.header.Set(headerSessionID, sessionID)
	}

	status, err := c.notify(ctx, s.header, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	if status != http.StatusAccepted {
		warn(fmt.Sprintf("notifications/initialized returned %d, the spec requires 202", status))
	}
	return s, nil
}

// deleteHeader returns the headers for the DELETE that ends s.
func (s *session) deleteHeader(user http.Header) http.Header {
	h := make(http.Header, 2+len(user))
	for k, vs := range user {
		h[k] = append([]string(nil), vs...)
	}
	h.Set(headerProtocolVersion, s.version)
	h.Set(headerSessionID, s.id)
	return h
}

// isModern reports whether v is a revision of the stateless era:
// 2026-07-28 or a later one (revisions are dates, YYYY-MM-DD, which
// compare as strings; anything else is not a revision of that era).
func isModern(v string) bool {
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		return false
	}
	return v >= "2026-07-28"
}

// headerValue is v as a header carries it (basic/transports/streamable-http,
// "Value Encoding"): as it is when every byte is printable ASCII,
// otherwise in the Base64 sentinel form =?base64?…?=.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	return v
}

// Headers of a request of the stateless era (basic/transports/streamable-http,
// "Standard Headers").
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// discover runs server/discover and returns the "session" of the
// stateless era: no id, the _meta every request carries, and the
// MCP-Protocol-Version header.
func discover(ctx context.Context, c *conn, user http.Header, protocolVersion, clientVersion string) (*session, error) {
	meta, err := json.Marshal(map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocolVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpload", "version": clientVersion},
	})
	if err != nil {
		return nil, fmt.Errorf("encode _meta: %w", err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(initializeID) + `,"method":"server/discover","params":{"_meta":` + string(meta) + `}}`)
	header := baseHeader(user)
	header.Set(headerProtocolVersion, protocolVersion)
	header.Set(headerMethod, "server/discover")
	env, _, err := c.call(ctx, header, body, []byte(strconv.Itoa(initializeID)))
	if err != nil {
		return nil, fmt.Errorf("server/discover: %w", err)
	}
	if len(env.Error) > 0 {
		return nil, fmt.Errorf("server/discover: JSON-RPC error %s", rpcErrorMessage(env.Error))
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
		Meta              struct {
			ServerInfo struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(env.Result, &res); err != nil {
		return nil, fmt.Errorf("server/discover: decode result: %w", err)
	}
	if !slices.Contains(res.SupportedVersions, protocolVersion) {
		return nil, fmt.Errorf("server/discover: the server supports %v, not %s", res.SupportedVersions, protocolVersion)
	}
	s := &session{url: c.url, version: protocolVersion, server: res.Meta.ServerInfo.Name + " " + res.Meta.ServerInfo.Version, meta: meta}
	s.header = baseHeader(user)
	s.header.Set(headerProtocolVersion, protocolVersion)
	return s, nil
}
