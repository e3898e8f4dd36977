package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// subscriptions/listen (basic/patterns/subscriptions;
// docs/adr/0054-listen-across-replicas.md): a modern client's stream of
// the notifications it asked for. The stream is the POST's response: the
// acknowledgement first, then what the filter admits, each message naming
// the listen request in _meta, keep-alive comments while it is quiet,
// and, when the server ends it (shutdown, a client too slow to read), the
// completion result before it closes. Closing it is the client's
// cancellation. A listen has no event ids and no resumption: the era has
// none.
//
// Where the notifications come from: a resource update or a change of
// the tenant's resource list happens on one replica and reaches every
// replica's listeners through the ListenBus; tool and prompt lists change
// on every replica by itself (each reads the same upstream registry), and
// each tells its own listeners.

// Bounds of a listen's filter: a URI a browser would accept (the bound of
// resources/subscribe), and a number of them that keeps one listen's
// entries in the index small.
const (
	maxListenURIBytes = 2048
	MaxListenURIs     = 256
)

// maxListenIDBytes bounds a listen request's id, as JSON: the stream
// keeps it, and repeats it in every message it sends
// (basic/patterns/subscriptions).
const maxListenIDBytes = 256

// listenQueue is how many notifications a listener may have waiting for
// its connection; a client that lets more pile up is too slow to read,
// and the server ends its listen (the client may open another and read
// again what it cares about: the era has no redelivery).
const listenQueue = 64

// listenNote is one notification for listeners: its method and the
// members of its params besides _meta, encoded once and shared by every
// listener it is queued for.
type listenNote struct {
	method  string
	members []byte
}

// listener is one open listen stream.
type listener struct {
	sub       protocol.ID // the listen request's id, verbatim
	key       string      // names it among this replica's subscribers (Subscribers)
	tenant    string
	principal string
	filter    protocol.SubscriptionFilter // what is honoured
	upstream  []string                    // the URIs subscribed upstream for it (upstream.go)
	notes     chan *listenNote
	endOnce   sync.Once
	end       chan struct{} // closed: the server ends the listen
	// kick, once set, tells the listen's writer of a notification
	// queued or the end (drive.go).
	kick atomic.Pointer[func()]
}

// stop asks the listener's stream to end with the completion result.
func (l *listener) stop() {
	l.endOnce.Do(func() { close(l.end) })
	l.kicked()
}

// offer queues n, or, when the client lets too many wait, ends the listen.
func (l *listener) offer(n *listenNote) {
	select {
	case l.notes <- n:
		l.kicked()
	default:
		l.stop()
	}
}

// drive has kick tell l's writer of what it must write.
func (l *listener) drive(kick func()) { l.kick.Store(&kick) }

func (l *listener) kicked() {
	if k := l.kick.Load(); k != nil {
		(*k)()
	}
}

// listens is this replica's index of open listen streams: by (tenant,
// URI) for resource updates, and the listeners of list changes, so that
// a notification costs O(its listeners).
type listens struct {
	byURI *subscribers[*listener] // resourceSubscriptions

	mu         sync.RWMutex
	stopped    bool                   // stopAll ran: a listen added now ends at once
	lists      map[*listener]struct{} // listeners of any list change
	all        map[*listener]struct{}
	principals map[string]int // open listens per principal
}

func newListens() *listens {
	return &listens{byURI: newSubscribers[*listener](), lists: map[*listener]struct{}{},
		all: map[*listener]struct{}{}, principals: map[string]int{}}
}

// add indexes l unless its principal has limit listens open already (0:
// no limit).
func (x *listens) add(l *listener, limit int) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if limit > 0 && x.principals[l.principal] >= limit {
		return false
	}
	x.principals[l.principal]++
	x.all[l] = struct{}{}
	if x.stopped {
		// It passed the draining check before stopAll, and was added
		// after: it ends like the others, with its completion result.
		l.stop()
	}
	f := l.filter
	if f.ToolsListChanged || f.PromptsListChanged || f.ResourcesListChanged {
		x.lists[l] = struct{}{}
	}
	for _, u := range f.ResourceSubscriptions {
		x.byURI.add(l.tenant, u, l)
	}
	return true
}

func (x *listens) remove(l *listener) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.all[l]; !ok {
		return
	}
	delete(x.all, l)
	delete(x.lists, l)
	if x.principals[l.principal]--; x.principals[l.principal] <= 0 {
		delete(x.principals, l.principal)
	}
	for _, u := range l.filter.ResourceSubscriptions {
		x.byURI.remove(l.tenant, u, l)
	}
}

// drop takes uris out of l's filter and of the index.
func (x *listens) drop(l *listener, uris []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, u := range uris {
		x.byURI.remove(l.tenant, u, l)
	}
	l.filter.ResourceSubscriptions = slices.DeleteFunc(slices.Clone(l.filter.ResourceSubscriptions),
		func(u string) bool { return slices.Contains(uris, u) })
}

// updated queues uri's update for tenant's listeners of it, and reports
// how many. The notification is encoded once, and only when someone
// listens: every mutation reports its entities and patterns here.
func (x *listens) updated(tenantID, uri string) int {
	var n *listenNote
	return x.byURI.each(tenantID, uri, func(l *listener) {
		if n == nil {
			n = uriNote(uri)
		}
		l.offer(n)
	})
}

// listChanged queues the list change method for the listeners of its
// list; tenantID "" means every tenant's (tools and prompts are the same
// for all).
func (x *listens) listChanged(tenantID, method string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var n *listenNote
	count := 0
	for l := range x.lists {
		if tenantID != "" && l.tenant != tenantID {
			continue
		}
		var wants bool
		switch method {
		case protocol.NotificationToolsListChanged:
			wants = l.filter.ToolsListChanged
		case protocol.NotificationPromptsListChanged:
			wants = l.filter.PromptsListChanged
		case protocol.NotificationResourcesListChange:
			wants = l.filter.ResourcesListChanged
		}
		if wants {
			if n == nil {
				n = &listenNote{method: method}
			}
			l.offer(n)
			count++
		}
	}
	return count
}

// stopAll ends every listen with its completion result.
func (x *listens) stopAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped = true
	for l := range x.all {
		l.stop()
	}
}

// count is the number of open listens.
func (x *listens) count() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.all)
}

// ListenEvent is a notification for the listen streams of every replica:
// a resource's update (Method notifications/resources/updated, with its
// URI) or a change of a tenant's resource list.
type ListenEvent struct {
	Tenant string
	Method string
	URI    string
	// Cause is the span of the delivery that published it on another
	// replica, when that was traced: this replica's delivery links to it
	// (docs/adr/0046-opentelemetry.md). Zero otherwise.
	Cause trace.SpanContext
}

// ListenBus carries ListenEvents between the replicas of a deployment
// (docs/adr/0054-listen-across-replicas.md). The replica where an event
// happens tells its own listeners itself and publishes the event; every
// other replica delivers it to its listeners of the tenant
// (SharingConfig.Listen). The era has no redelivery: an event lost while
// Redis cannot be reached is lost, which the cache hints bound.
type ListenBus interface {
	// PublishListen sends ev to the other replicas. It never blocks and
	// never fails the change that caused it.
	PublishListen(ev ListenEvent)
	// WatchTenant makes this replica receive tenant's events until the
	// matching UnwatchTenant; what it returns is closed once events
	// published from then on will arrive (or once the bus stopped
	// waiting for Redis to say so).
	WatchTenant(tenant string) <-chan struct{}
	UnwatchTenant(tenant string)
}

// listenFor decodes and bounds a listen's filter, and returns what the
// server honours of it: the list changes it announces (discover's
// capabilities) and the URIs, when it serves resources.subscribe.
func (t *Transport) listenFor(params json.RawMessage) (protocol.SubscriptionFilter, *protocol.Error) {
	var p protocol.ListenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return protocol.SubscriptionFilter{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s", logging.Field(err.Error()))
	}
	if p.Notifications == nil {
		return protocol.SubscriptionFilter{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: notifications is required: the filter of what this listen receives")
	}
	f := *p.Notifications
	if len(f.ResourceSubscriptions) > MaxListenURIs {
		return f, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: notifications.resourceSubscriptions has %d URIs; at most %d per listen", len(f.ResourceSubscriptions), MaxListenURIs)
	}
	for i, u := range f.ResourceSubscriptions {
		if len(u) > maxListenURIBytes {
			return f, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: notifications.resourceSubscriptions[%d] is %d bytes; at most %d", i, len(u), maxListenURIBytes)
		}
		if pu, err := url.Parse(u); err != nil || pu.Scheme == "" {
			return f, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: notifications.resourceSubscriptions[%d] %q is not an absolute URI", i, logging.Field(u))
		}
	}
	caps := t.srv.ModernCapabilities()
	f.ToolsListChanged = f.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = f.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged
	f.ResourcesListChanged = f.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources == nil || !caps.Resources.Subscribe {
		f.ResourceSubscriptions = nil
	} else {
		f.ResourceSubscriptions = dedupe(f.ResourceSubscriptions)
	}
	return f, nil
}

// dedupe returns uris without repeats, in their first order.
func dedupe(uris []string) []string {
	seen := make(map[string]struct{}, len(uris))
	out := uris[:0:0]
	for _, u := range uris {
		if _, ok := seen[u]; !ok {
			seen[u] = struct{}{}
			out = append(out, u)
		}
	}
	return out
}

// listen serves a subscriptions/listen request, already checked as a
// modern request.
func (t *Transport) listen(w http.ResponseWriter, r *http.Request, msg *protocol.Message, sseOK bool, rec *requestLog) {
	if !sseOK {
		rec.rpcCode = protocol.CodeInvalidRequest
		writeError(w, http.StatusNotAcceptable, msg.ID, protocol.Errorf(protocol.CodeInvalidRequest,
			"not acceptable: subscriptions/listen answers with an event stream; Accept must include text/event-stream"))
		return
	}
	if len(msg.ID) > maxListenIDBytes {
		rec.rpcCode = protocol.CodeInvalidRequest
		writeError(w, http.StatusBadRequest, nil, protocol.Errorf(protocol.CodeInvalidRequest,
			"invalid request: the listen's id is %d bytes of JSON; at most %d, since every message of the stream repeats it", len(msg.ID), maxListenIDBytes))
		return
	}
	filter, perr := t.listenFor(msg.Params)
	if perr != nil {
		rec.rpcCode = perr.Code
		writeError(w, http.StatusOK, msg.ID, perr)
		return
	}
	// The id is copied: msg lives in the request's body buffer, which is
	// reused once the handler returns, and a listen outlives it.
	l := &listener{sub: append(protocol.ID(nil), msg.ID...), key: "listen-" + strconv.FormatInt(t.listenKeys.Add(1), 10),
		tenant: tenant.From(r.Context()), principal: principalID(r), filter: filter,
		notes: make(chan *listenNote, listenQueue), end: make(chan struct{})}
	if l.tenant == "" {
		l.tenant = tenant.Default
	}
	if t.draining.Load() {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, msg.ID, protocol.Errorf(protocol.CodeInternalError, "the server is shutting down; listen on another replica"))
		return
	}
	if !t.listens.add(l, t.opts.MaxListensPerPrincipal) {
		rec.rpcCode = protocol.CodeInvalidRequest
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, msg.ID, protocol.Errorf(protocol.CodeInvalidRequest,
			"too many listen streams: at most %d open at once per principal; close one first", t.opts.MaxListensPerPrincipal))
		return
	}
	watched := t.bus != nil && (len(filter.ResourceSubscriptions) > 0 || filter.ResourcesListChanged)
	t.subscribeUpstream(r.Context(), l)
	release := func() {
		t.listens.remove(l)
		t.unsubscribeUpstream(l)
		if watched {
			t.bus.UnwatchTenant(l.tenant)
		}
	}
	handedOff := false
	defer func() {
		if !handedOff {
			release()
		}
	}()
	if watched {
		// Acknowledged only once this replica hears the tenant's events:
		// a change made on another replica after the acknowledgement
		// reaches the listen.
		select {
		case <-t.bus.WatchTenant(l.tenant):
		case <-r.Context().Done():
			return
		}
	}
	handedOff = t.serveListen(w, r, l, release)
}

// appendListenEvent frames n for the listen sub as one SSE event, without
// an id: a listen is not resumed (basic/transports/streamable-http).
func appendListenEvent(dst []byte, sub protocol.ID, n *listenNote) []byte {
	dst = append(dst, "data: "...)
	dst = protocol.AppendListenNotification(dst, n.method, sub, n.members)
	return append(dst, "\n\n"...)
}

// uriNote is the notification of uri's update.
func uriNote(uri string) *listenNote {
	m := append([]byte(`"uri":`), protocol.AppendString(nil, uri)...)
	return &listenNote{method: protocol.NotificationResourcesUpdated, members: m}
}

// deliverListen tells this replica's listeners of ev, an event of this
// replica or one the bus brought from another.
func (t *Transport) deliverListen(ev ListenEvent) int {
	if ev.Method == protocol.NotificationResourcesUpdated {
		return t.listens.updated(ev.Tenant, ev.URI)
	}
	return t.listens.listChanged(ev.Tenant, ev.Method)
}

// listenEvent delivers ev here and publishes it to the other replicas.
func (t *Transport) listenEvent(ev ListenEvent) int {
	if t.bus != nil {
		t.bus.PublishListen(ev)
	}
	return t.deliverListen(ev)
}

// ResourcesListChanged tells the listeners of tenantID's resource list,
// on every replica, that it changed (entries were created or deleted).
// Client sessions of the legacy era are not told: their resources/list
// announces only what federation changes (ListChanged).
func (t *Transport) ResourcesListChanged(ctx context.Context, tenantID string) {
	if tenantID == "" {
		tenantID = tenant.Default
	}
	t.listenEvent(ListenEvent{Tenant: tenantID, Method: protocol.NotificationResourcesListChange, Cause: t.cause(ctx)})
}

// fromBus delivers an event another replica published; one of a kind the
// bus does not carry is dropped.
func (t *Transport) fromBus(ev ListenEvent) {
	switch ev.Method {
	case protocol.NotificationResourcesUpdated, protocol.NotificationResourcesListChange:
		if ev.Tenant != "" {
			span := t.busDeliverySpan(ev)
			n := t.deliverListen(ev)
			span.SetAttributes(mcpconv.Delivered.Int(n))
			span.End()
		}
	}
}
