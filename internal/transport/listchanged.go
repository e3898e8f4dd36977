package transport

import (
	"context"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// ListChanged sends a list_changed notification (notification is its
// method: notifications/prompts/list_changed, …) to every client
// session, as ToolsListChanged does for tools, and reports how many
// sessions it told. Every replica sees such a change by itself, so a
// shared session is told by one of them (ClientSession.broadcast), and
// each replica tells its own listen streams that asked for the list.
func (t *Transport) ListChanged(notification string) (int, error) {
	data, err := protocol.MarshalNotification(notification, nil)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", notification, err)
	}
	n := t.listens.listChanged("", notification)
	t.sessions.Each(func(s *ClientSession) bool {
		if s.broadcast(data) {
			n++
		}
		return true
	})
	return n, nil
}

// Subscribers returns the ids of tenantID's client sessions subscribed
// to uri: in this process's index, or, with shared sessions, in the
// shared store's, which every replica writes (SharedStore), so a
// subscription made or dropped on another replica counts. A shared index
// may still name a session that expired, until an update finds it gone.
func (t *Transport) Subscribers(ctx context.Context, tenantID, uri string) ([]string, error) {
	if tenantID == "" {
		tenantID = tenant.Default
	}
	ids, err := t.fanout.Subscribers(ctx, tenantID, uri)
	if err != nil {
		return nil, err
	}
	// And this replica's listens of it, which hold subscriptions upstream
	// on this replica only (upstream.go).
	t.listens.byURI.each(tenantID, uri, func(l *listener) { ids = append(ids, l.key) })
	return ids, nil
}
