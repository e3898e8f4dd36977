package upstream

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// DefaultDeniedNetworks are the networks a registered URL may not reach
// unless the operator says otherwise (federation.deniedNetworks):
// link-local addresses and the cloud providers' metadata and host
// services, which hand out credentials to whatever can reach them — the
// classic target of a server made to fetch a URL it was given. Loopback
// and the private ranges stay allowed: upstreams usually run in the same
// cluster.
func DefaultDeniedNetworks() []string {
	return []string{
		"169.254.0.0/16",     // IPv4 link-local: AWS, GCP, Azure, Oracle and DigitalOcean metadata (169.254.169.254)
		"fe80::/10",          // IPv6 link-local
		"fd00:ec2::254/128",  // AWS metadata over IPv6
		"100.100.100.200/32", // Alibaba Cloud metadata
		"168.63.129.16/32",   // Azure WireServer
		"192.0.0.192/32",     // Oracle Cloud metadata (legacy address)
	}
}

// ParseNetwork reads a CIDR prefix ("169.254.0.0/16") or a single address
// ("100.100.100.200", a /32 or /128).
func ParseNetwork(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix such as 169.254.0.0/16", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// deniedNetworks are the networks no connection to an upstream may reach.
type deniedNetworks []netip.Prefix

// match returns the denied network holding ip, if any. An IPv4 address
// written as IPv6 (::ffff:169.254.169.254) is the IPv4 address.
func (d deniedNetworks) match(ip netip.Addr) (netip.Prefix, bool) {
	ip = ip.Unmap().WithZone("") // a zone would make Contains false
	for _, p := range d {
		if p.Contains(ip) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// deniedError is a connection refused by federation.deniedNetworks. It
// names the configured network, never the address: the address may be
// what a host name resolved to inside the deployment.
type deniedError struct{ network netip.Prefix }

func (e *deniedError) Error() string {
	return fmt.Sprintf("the server's address is in %s, which federation.deniedNetworks denies", e.network)
}

// control is the dialer's Control hook: it sees the address a connection
// is about to be made to, after name resolution, so neither a host name
// resolving into a denied network nor one re-resolving there later (DNS
// rebinding) nor a redirect to either gets through.
func (d deniedNetworks) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected dial address form: %w", err)
	}
	if p, ok := d.match(ap.Addr()); ok {
		return &deniedError{network: p}
	}
	return nil
}

// checkHost refuses a host (a URL's Hostname, without brackets) that is
// an IP address in a denied network. Host names are left to the dialer, which sees what they
// resolve to when it connects.
func (d deniedNetworks) checkHost(host string) error {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	if p, ok := d.match(ip); ok {
		return &deniedError{network: p}
	}
	return nil
}

// CheckNetworks reports a *FieldError for url when its host is an IP
// address in one of denied: such a server could never be reached, and
// registering it is an attempt to make the gateway fetch what it must not.
func (c Config) CheckNetworks(denied []netip.Prefix) error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil // Validate reports it
	}
	if err := deniedNetworks(denied).checkHost(u.Hostname()); err != nil {
		return invalid("url", "%v; use another address, or take the network out of federation.deniedNetworks", err)
	}
	return nil
}

// newDialer is the dialer of every upstream connection: net/http's
// default settings, plus the denied networks.
func newDialer(denied deniedNetworks) *net.Dialer {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	if len(denied) > 0 {
		d.Control = denied.control
	}
	return d
}
