package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Notification latency (-subscribers).
//
// A notifications/resources/updated carries only the URI, not the request
// that caused it, so mcpload charges each notification to the most recent
// mutating request: latency = when the subscriber decoded the notification -
// when a worker last began sending a request of a -mix-mutating entry (the
// clock is read just before the POST). With one mutating request in flight
// at a time this is exact (up to the client's own scheduling). When several
// overlap, a notification caused by an earlier one is charged to a later
// send, so the figure understates the true latency: keep mutating entries a
// small share of the mix, or measure with -concurrency 1, for precise
// numbers.
//
// Only notifications charged to a mutating request sent during the measured
// phase count (not the warmup's). Expected notifications = mutating requests
// of the measured phase that succeeded × subscribers; missed = expected -
// received when positive (a server that coalesces updates shows as missed;
// a plain -mix entry that also changes the URI shows as received > expected).
// After the measured phase mcpload waits up to -notify-wait for the
// expected count to arrive.

// mutationClock holds the send time of the latest mutating request, in
// nanoseconds since base (monotonic), for the subscribers to read.
type mutationClock struct {
	base        time.Time
	last        atomic.Int64 // 0: none sent yet
	measureFrom atomic.Int64 // sends before it belong to the warmup
}

func newMutationClock() *mutationClock {
	c := &mutationClock{base: time.Now()}
	c.measureFrom.Store(math.MaxInt64)
	return c
}

func (c *mutationClock) now() int64 { return int64(time.Since(c.base)) + 1 }

// sent records that a mutating request is being sent now. Workers race: keep
// the latest time.
func (c *mutationClock) sent() {
	t := c.now()
	for {
		old := c.last.Load()
		if old >= t || c.last.CompareAndSwap(old, t) {
			return
		}
	}
}

// startMeasuring makes sends from now on count.
func (c *mutationClock) startMeasuring() { c.measureFrom.Store(c.now()) }

// charge returns the latency of a notification received now, and whether it
// counts (its mutation was sent in the measured phase).
func (c *mutationClock) charge() (time.Duration, bool) {
	now := c.now()
	sent := c.last.Load()
	if sent == 0 || sent < c.measureFrom.Load() {
		return 0, false
	}
	return time.Duration(now - sent), true
}

// maxReconnects bounds consecutive failed attempts to reopen a GET stream.
const maxReconnects = 5

// subscriber is one extra client session that subscribed to the URI and
// holds its GET stream open; in the stateless era, a subscriptions/listen
// stream naming the URI.
type subscriber struct {
	sess   *session
	hc     *http.Client
	url    string
	uri    string
	header http.Header // GET headers: the session's, with Accept: text/event-stream
	clock  *mutationClock
	// listen is the body of the subscriptions/listen request that opens
	// the stream (POSTed with header); nil: a GET stream.
	listen []byte
	// p reads the open stream; open resets it for each new one.
	p *sseParser

	received   atomic.Uint64 // notifications counted (measured phase)
	hist       *histogram    // owned by run until it returns
	reconnects int
	lastErr    error
}

// subscribe sends resources/subscribe for uri on the session.
func subscribe(ctx context.Context, c *conn, s *session, uri string) error {
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": firstWorkerID, "method": "resources/subscribe",
		"params": map[string]string{"uri": uri},
	})
	if err != nil {
		return fmt.Errorf("encode resources/subscribe: %w", err)
	}
	env, _, err := c.call(ctx, s.header, body, []byte(strconv.Itoa(firstWorkerID)))
	if err != nil {
		return fmt.Errorf("resources/subscribe: %w", err)
	}
	if len(env.Error) > 0 {
		return fmt.Errorf("resources/subscribe %s: JSON-RPC error %s", uri, rpcErrorMessage(env.Error))
	}
	return nil
}

// startSubscriber subscribes session s to the run's URI and opens its GET
// stream on url (on sctx, which the run cancels to stop it); in the
// stateless era it opens a listen naming the URI instead, and returns
// once the server acknowledged it.
func startSubscriber(ctx, sctx context.Context, hs *conn, hc *http.Client, url string, s *session, cfg *config, clock *mutationClock) (*subscriber, *http.Response, error) {
	if s.meta == nil {
		if err := subscribe(ctx, hs, s, cfg.subscribeURI); err != nil {
			return nil, nil, err
		}
	}
	sub, err := newSubscriber(hc, url, cfg.subscribeURI, s, clock)
	if err != nil {
		return nil, nil, err
	}
	resp, err := sub.open(sctx, cfg.timeout, "")
	return sub, resp, err
}

func newSubscriber(hc *http.Client, url, uri string, s *session, clock *mutationClock) (*subscriber, error) {
	sub := &subscriber{sess: s, hc: hc, url: url, uri: uri, clock: clock, hist: newHistogram()}
	if s.meta != nil {
		params, err := json.Marshal(map[string]any{"_meta": s.meta, "notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
		if err != nil {
			return nil, fmt.Errorf("encode subscriptions/listen: %w", err)
		}
		sub.listen = []byte(`{"jsonrpc":"2.0","id":"mcpload-listen","method":"subscriptions/listen","params":` + string(params) + `}`)
		sub.header = s.header.Clone()
		sub.header.Set(headerMethod, "subscriptions/listen")
		return sub, nil
	}
	sub.header = s.header.Clone()
	sub.header.Del("Content-Type")
	sub.header.Set("Accept", contentTypeSSE)
	return sub, nil
}

// open starts the GET stream, or the listen; the response headers (and a
// listen's acknowledgement) must arrive within timeout. lastEventID
// resumes a GET stream that ended.
func (s *subscriber) open(ctx context.Context, timeout time.Duration, lastEventID string) (*http.Response, error) {
	// A timeout for the headers only: the stream itself lasts the run.
	hctx, cancel := context.WithCancel(ctx)
	method, what := http.MethodGet, "GET stream"
	var body io.Reader
	if s.listen != nil {
		method, what, body = http.MethodPost, "listen", bytes.NewReader(s.listen)
	}
	req, err := http.NewRequestWithContext(hctx, method, s.url, body)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("build %s request: %w", what, err)
	}
	req.Header = s.header
	if lastEventID != "" {
		req.Header = s.header.Clone()
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() { timedOut.Store(true); cancel() })
	defer timer.Stop()
	resp, err := s.hc.Do(req)
	if err != nil {
		cancel()
		if timedOut.Load() {
			return nil, fmt.Errorf("%s: no response within %s", what, timeout)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer drainClose(resp.Body)
		if resp.StatusCode == http.StatusMethodNotAllowed {
			return nil, errors.New("GET stream: the server offers none (405), so it cannot send notifications outside a request")
		}
		return nil, fmt.Errorf("%s: %w", what, httpStatusError(resp))
	}
	if mt := mediaType(resp.Header); mt != contentTypeSSE {
		cancel()
		drainClose(resp.Body)
		return nil, fmt.Errorf("%s: Content-Type %q, want %s", what, resp.Header.Get("Content-Type"), contentTypeSSE)
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	if s.p == nil {
		s.p = newSSEParser(resp.Body)
	} else {
		s.p.reset(resp.Body)
	}
	if s.listen != nil {
		// Only once acknowledged does the listen hear every change.
		if err := s.acknowledged(); err != nil {
			_ = resp.Body.Close()
			if timedOut.Load() {
				return nil, fmt.Errorf("listen: no acknowledgement within %s", timeout)
			}
			return nil, fmt.Errorf("listen: %w", err)
		}
	}
	return resp, nil
}

// acknowledged reads the listen's first message, which must be its
// acknowledgement.
func (s *subscriber) acknowledged() error {
	for {
		ev, err := s.p.next()
		if err != nil {
			return fmt.Errorf("stream ended before the acknowledgement: %w", err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		var msg struct {
			Method string          `json:"method"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &msg); err != nil || msg.Method != "notifications/subscriptions/acknowledged" {
			return fmt.Errorf("first message is not the acknowledgement: %s", truncate(string(ev.Data), 200))
		}
		return nil
	}
}

// cancelBody cancels the request's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// run reads the stream resp until ctx ends, reopening it with Last-Event-ID
// if the server ends it.
func (s *subscriber) run(ctx context.Context, resp *http.Response, timeout time.Duration) {
	failures := 0
	for {
		lastID, err := s.read(s.p)
		_ = resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stream ended by the server")
		}
		s.lastErr = err
		for {
			s.reconnects++
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			resp, err = s.open(ctx, timeout, lastID)
			if err == nil {
				failures = 0
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.lastErr = err
			if failures++; failures >= maxReconnects {
				return
			}
		}
	}
}

// read consumes events until the stream ends and returns the last event id.
func (s *subscriber) read(p *sseParser) (string, error) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	lastID := ""
	for {
		ev, err := p.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return lastID, err
		}
		lastID = string(ev.ID)
		if len(ev.Type) > 0 && string(ev.Type) != "message" {
			continue
		}
		msg.Method, msg.Params.URI = "", ""
		if json.Unmarshal(ev.Data, &msg) != nil {
			continue // a priming event or something else that is not ours
		}
		if msg.Method != "notifications/resources/updated" || msg.Params.URI != s.uri {
			continue
		}
		if lat, ok := s.clock.charge(); ok {
			s.hist.Record(lat)
			s.received.Add(1)
		}
	}
}

// subscribers runs the subscribers' streams.
type subscribers struct {
	list   []*subscriber
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (ss *subscribers) received() uint64 {
	var n uint64
	for _, s := range ss.list {
		n += s.received.Load()
	}
	return n
}

// wait waits until n notifications have been counted, at most d.
func (ss *subscribers) wait(ctx context.Context, n uint64, d time.Duration) {
	deadline := time.Now().Add(d)
	for ss.received() < n && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the streams and waits for the readers.
func (ss *subscribers) stop() {
	if ss.cancel != nil {
		ss.cancel()
	}
	ss.wg.Wait()
}
