package ratelimit

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestAddressKey(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:4321", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:4321", "192.0.2.7"}, // IPv4-mapped: the IPv4 address's bucket
		{"[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443", "2001:db8:1:2::"},
		{"[2001:db8:1:2::1%eth0]:443", "2001:db8:1:2::"},
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::"},
		{"192.0.2.7", "192.0.2.7"}, // no port
		{"@", "invalid IP"},        // not an IP address: the shared zero bucket
		{"", "invalid IP"},
	} {
		if got := AddressKey(tc.remote).String(); got != tc.want {
			t.Errorf("AddressKey(%q) = %s, want %s", tc.remote, got, tc.want)
		}
	}
}

// An address may spend Burst at once, then PerSecond; a refused Spend
// says how long to wait and spends nothing; Refund gives one back;
// another address, or another /64, has a budget of its own, while the
// addresses of one /64 share one.
func TestAddressesBudget(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a := NewAddresses(Rate{PerSecond: 2, Burst: 3}, 0, c.now)
	const attacker = "192.0.2.7:1000"
	for i := range 3 {
		if d := a.Spend(attacker); d != 0 {
			t.Fatalf("spend %d of the burst refused (%v)", i, d)
		}
	}
	for range 2 { // from another port too; refused twice: nothing spent
		if d := a.Spend("192.0.2.7:2000"); d != 500*time.Millisecond {
			t.Fatalf("Spend after the burst = %v, want refused for 500ms", d)
		}
	}
	a.Refund(attacker)
	if d := a.Spend(attacker); d != 0 {
		t.Fatalf("after a refund: %v", d)
	}
	if d := a.Spend("192.0.2.8:1000"); d != 0 {
		t.Fatal("another address shares the budget")
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if d := a.Spend(attacker); d != 0 {
		t.Fatalf("after the wait: %v", d)
	}
	c.t = c.t.Add(time.Hour)
	a.Refund("192.0.2.8:1000") // refilled meanwhile: forgotten, not negative
	if n := allowed(5, func() time.Duration { return a.Spend("192.0.2.8:1000") }); n != 3 {
		t.Fatalf("%d spends allowed at once after a refund of a full bucket, want Burst (3)", n)
	}

	for i := range 3 {
		_ = a.Spend(fmt.Sprintf("[2001:db8::%x]:1", i+1))
	}
	if d := a.Spend("[2001:db8::ffff]:1"); d == 0 {
		t.Fatal("another address of the same /64 has a budget of its own")
	}
	if d := a.Spend("[2001:db8:0:1::1]:1"); d != 0 {
		t.Fatal("another /64 shares the budget")
	}

	off := NewAddresses(Rate{}, 0, c.now)
	for range 10 {
		if off.Spend(attacker) != 0 {
			t.Fatal("a rate of 0 limits")
		}
	}
	if off.Len() != 0 {
		t.Fatal("a rate of 0 holds buckets")
	}
}

// A Bucket allows Burst at once, then PerSecond, and says how long to
// wait.
func TestBucket(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b := NewBucket(Rate{PerSecond: 4, Burst: 2}, c.now)
	if n := allowed(2, b.Take); n != 2 {
		t.Fatalf("%d of the burst of 2 allowed", n)
	}
	if d := b.Take(); d != 250*time.Millisecond {
		t.Fatalf("Take on an empty bucket = %v, want 250ms", d)
	}
	c.t = c.t.Add(250 * time.Millisecond)
	if n := allowed(2, b.Take); n != 1 {
		t.Fatalf("after 250ms: %d allowed, want one more", n)
	}
	if NewBucket(Rate{}, nil).Take() != 0 {
		t.Fatal("a rate of 0 limits")
	}
}

// However many addresses spend, the table holds at most max buckets;
// refilled buckets go first, and the ones still spent are kept while
// there is room.
func TestAddressesBounded(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	const max = 64
	a := NewAddresses(Rate{PerSecond: 1, Burst: 2}, max, c.now)
	addr := func(i int) string {
		return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String() + ":1"
	}
	// max/2 addresses spend their whole budget; the other half refills.
	for i := range max / 2 {
		a.Spend(addr(i))
		a.Spend(addr(i))
	}
	c.t = c.t.Add(10 * time.Millisecond)
	for i := max / 2; i < max; i++ {
		a.Spend(addr(i))
	}
	c.t = c.t.Add(time.Second + 10*time.Millisecond) // the single spends have refilled
	a.Spend(addr(max))
	if n := a.Len(); n != max/2+1 {
		t.Fatalf("after making room: %d buckets, want the %d still spent and the new one", n, max/2+1)
	}
	if a.Spend(addr(0)) != 0 || a.Spend(addr(0)) == 0 {
		t.Fatal("a bucket still spent was forgotten while refilled ones could go")
	}
	for i := range 100_000 {
		a.Spend(addr(1000 + i))
		if a.Len() > max {
			t.Fatalf("%d buckets held, bound %d", a.Len(), max)
		}
	}
}

// allowed calls spend n times and counts the calls it allowed (zero wait).
func allowed(n int, spend func() time.Duration) int {
	ok := 0
	for range n {
		if spend() == 0 {
			ok++
		}
	}
	return ok
}

// Behind trusted proxies the client is the right-most address of
// X-Forwarded-For that is not a proxy; without them, or from an address
// that is not one, the header is ignored.
func TestProxiesClient(t *testing.T) {
	p, err := ParseProxies([]string{"10.0.0.0/8", "2001:db8::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"direct client", "192.0.2.7:1", []string{"198.51.100.1"}, "192.0.2.7:1"},
		{"through a proxy", "10.1.2.3:1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"the client's own words to the left", "10.1.2.3:1", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"two proxies, two headers", "10.1.2.3:1", []string{"203.0.113.9", "198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"IPv6 proxy", "[2001:db8::1]:1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"garbage from the client", "10.1.2.3:1", []string{"not-an-ip, 10.4.4.4"}, "10.4.4.4"},
		{"no header", "10.1.2.3:1", nil, "10.1.2.3:1"},
	} {
		if got := p.Client(tc.remote, tc.xff); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := (Proxies{}).Client("10.1.2.3:1", []string{"198.51.100.1"}); got != "10.1.2.3:1" {
		t.Errorf("no trusted proxies: %s", got)
	}
	if _, err := ParseProxies([]string{"10.0.0.0/8", "proxy.local"}); err == nil || !strings.Contains(err.Error(), "[1]") {
		t.Errorf("bad entry: %v", err)
	}
}
