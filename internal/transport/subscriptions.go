package transport

import "sync"

// subscribers indexes the subscribers of resource URIs, per tenant, so
// that a resource update costs O(subscribers of that URI) instead of a
// scan of every subscriber: State Sync publishes one update per changed
// entity and per invalidated pattern on every mutation. Client sessions
// (resources/subscribe) and listen streams (subscriptions/listen) each
// have one.
//
// Lock order: a session's mu before the index's mu; delivery holds the
// index's read lock while appending to streams or queues, which take
// only their own lock.
type subscribers[T comparable] struct {
	mu    sync.RWMutex
	byKey map[string]map[T]struct{}
}

// subscriptions is the index of client sessions' resources/subscribe.
type subscriptions = subscribers[*ClientSession]

func newSubscribers[T comparable]() *subscribers[T] {
	return &subscribers[T]{byKey: map[string]map[T]struct{}{}}
}

func newSubscriptions() *subscriptions { return newSubscribers[*ClientSession]() }

// subKey scopes a URI by tenant: a notification never crosses tenants.
func subKey(tenant, uri string) string { return tenant + "\x00" + uri }

func (x *subscribers[T]) add(tenant, uri string, s T) {
	k := subKey(tenant, uri)
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.byKey[k]
	if set == nil {
		set = map[T]struct{}{}
		x.byKey[k] = set
	}
	set[s] = struct{}{}
}

func (x *subscribers[T]) remove(tenant, uri string, s T) {
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

// each calls fn for every subscriber of uri in tenant; fn must not
// subscribe or unsubscribe.
func (x *subscribers[T]) each(tenant, uri string, fn func(T)) int {
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
func (x *subscribers[T]) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byKey)
}
