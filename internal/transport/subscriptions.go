package transport

import "sync"

// subscriptions indexes client sessions by the resource URIs they
// subscribed to (resources/subscribe), per tenant, so that a resource
// update costs O(subscribers of that URI) instead of a scan of every
// client session: State Sync publishes one update per changed entity and
// per invalidated pattern on every mutation.
//
// Lock order: a session's mu before the index's mu; delivery holds the
// index's read lock while appending to streams, which take only their own
// lock.
type subscriptions struct {
	mu    sync.RWMutex
	byKey map[string]map[*ClientSession]struct{}
}

func newSubscriptions() *subscriptions {
	return &subscriptions{byKey: map[string]map[*ClientSession]struct{}{}}
}

// subKey scopes a URI by tenant: a notification never crosses tenants.
func subKey(tenant, uri string) string { return tenant + "\x00" + uri }

func (x *subscriptions) add(tenant, uri string, s *ClientSession) {
	k := subKey(tenant, uri)
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.byKey[k]
	if set == nil {
		set = map[*ClientSession]struct{}{}
		x.byKey[k] = set
	}
	set[s] = struct{}{}
}

func (x *subscriptions) remove(tenant, uri string, s *ClientSession) {
	k := subKey(tenant, uri)
	x.mu.Lock()
	defer x.mu.Unlock()
	if set := x.byKey[k]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(x.byKey, k)
		}
	}
}

// each calls fn for every session subscribed to uri in tenant; fn must not
// subscribe or unsubscribe.
func (x *subscriptions) each(tenant, uri string, fn func(*ClientSession)) int {
	k := subKey(tenant, uri)
	x.mu.RLock()
	defer x.mu.RUnlock()
	set := x.byKey[k]
	for s := range set {
		fn(s)
	}
	return len(set)
}

// len is the number of distinct (tenant, URI) pairs with subscribers.
func (x *subscriptions) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byKey)
}
