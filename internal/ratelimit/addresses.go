package ratelimit

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// MaxAddresses bounds the buckets an Addresses table holds. An entry is
// about 100 bytes, so the table stays under 7 MB however many addresses
// an attacker sends from.
const MaxAddresses = 1 << 16

// Addresses is a bucket per remote address, in process: the budget of
// callers that have no principal yet (rateLimits.unauthenticated). It is
// per replica on purpose: a flood of failures would otherwise cost a
// Redis round trip each, and per-replica budgets still bound it.
//
// An IPv4 address is its own bucket; IPv6 addresses share one per /64,
// the smallest block a site is normally given, so an attacker cannot
// draw a fresh budget from each of its 2^64 addresses. Only addresses
// that spent something are held, and at most MaxAddresses of them: a
// full table first forgets the buckets that have refilled (forgetting
// them changes no decision); if that frees less than an eighth, it
// forgets them all, which gives the addresses in it a fresh budget but
// keeps the table's memory bounded and its cost O(1) per request.
type Addresses struct {
	rate Rate
	max  int
	now  func() time.Time
	mu   sync.Mutex
	tats map[netip.Addr]time.Time
}

// NewAddresses returns an empty table spending at rate r; max bounds it
// (MaxAddresses if 0), now is the clock (nil: time.Now).
func NewAddresses(r Rate, max int, now func() time.Time) *Addresses {
	if max <= 0 {
		max = MaxAddresses
	}
	if now == nil {
		now = time.Now
	}
	return &Addresses{rate: r, max: max, now: now, tats: map[netip.Addr]time.Time{}}
}

// AddressKey is the bucket of remoteAddr (an http.Request's RemoteAddr,
// host:port): the IPv4 address, or the IPv6 address's /64. A RemoteAddr
// that is not an IP address (a Unix socket, a test) maps to the zero
// Addr, one bucket for all of them.
func AddressKey(remoteAddr string) netip.Addr {
	ip := remoteIP(remoteAddr)
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return ip
}

// remoteIP is the IP address of remoteAddr (host:port or a bare host),
// IPv4-mapped addresses as IPv4, without a zone; the zero Addr if it is
// not an IP address.
func remoteIP(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap().WithZone("")
}

// Spend spends one request of remoteAddr's budget and returns zero, or,
// when the budget is spent, how long until it allows one (and spends
// nothing).
func (a *Addresses) Spend(remoteAddr string) time.Duration {
	if a.rate.Off() {
		return 0
	}
	key := AddressKey(remoteAddr)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now() // read under the lock: arrivals are applied in order
	tat, ok := a.tats[key]
	if !ok && len(a.tats) >= a.max {
		a.makeRoom(now)
	}
	d, tat := gcra(a.rate, tat, now)
	a.tats[key] = tat
	return d.RetryAfter
}

// Refund gives back one request spent by remoteAddr: a spend made in
// advance for something that turned out not to count.
func (a *Addresses) Refund(remoteAddr string) {
	if a.rate.Off() {
		return
	}
	key := AddressKey(remoteAddr)
	a.mu.Lock()
	defer a.mu.Unlock()
	tat, ok := a.tats[key]
	if !ok {
		return
	}
	if tat = tat.Add(-a.rate.interval()); tat.After(a.now()) {
		a.tats[key] = tat
	} else {
		delete(a.tats, key) // full again
	}
}

// makeRoom forgets the buckets that are full again, or, if that frees
// less than an eighth of the table, every bucket. a.mu is held.
func (a *Addresses) makeRoom(now time.Time) {
	for k, tat := range a.tats {
		if !tat.After(now) {
			delete(a.tats, k)
		}
	}
	if len(a.tats) > a.max-a.max/8 {
		clear(a.tats)
	}
}

// Len is the number of addresses held.
func (a *Addresses) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tats)
}

// Proxies are the addresses of reverse proxies whose X-Forwarded-For is
// believed (rateLimits.trustedProxies). Empty, the default, believes
// none: the header is the client's to write, and one that could choose
// its address would choose a fresh budget each time.
type Proxies []netip.Prefix

// ParseProxies parses IP addresses and CIDR prefixes; the error names
// the index of the bad entry.
func ParseProxies(list []string) (Proxies, error) {
	p := make(Proxies, 0, len(list))
	for i, s := range list {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			ip, ierr := netip.ParseAddr(s)
			if ierr != nil {
				return nil, fmt.Errorf("[%d]: %q is neither an IP address nor a CIDR prefix", i, s)
			}
			prefix = netip.PrefixFrom(ip, ip.BitLen())
		}
		p = append(p, prefix.Masked())
	}
	return p, nil
}

func (p Proxies) trusts(ip netip.Addr) bool {
	for _, prefix := range p {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// Client is the address a request comes from: remoteAddr, or, when that
// is a trusted proxy, the right-most address of forwardedFor (the
// request's X-Forwarded-For values) that is not one — the last hop a
// trusted proxy saw. Entries to its left are the client's own words.
func (p Proxies) Client(remoteAddr string, forwardedFor []string) string {
	if ip := remoteIP(remoteAddr); !ip.IsValid() || !p.trusts(ip) {
		return remoteAddr
	}
	client := remoteAddr
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		hops := strings.Split(forwardedFor[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			ip := remoteIP(strings.TrimSpace(hops[j]))
			if !ip.IsValid() {
				return client // not written by a trusted proxy: stop at the last that was
			}
			if !p.trusts(ip) {
				return ip.String()
			}
			client = ip.String()
		}
	}
	return client
}
