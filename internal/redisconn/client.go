package redisconn

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Mode is how a deployment runs Redis.
type Mode string

const (
	// Single is one Redis node (optionally with replicas it fails over to
	// by hand): REDIS_URL is redis://host:port/db.
	Single Mode = "single"
	// Sentinel is a master found through Sentinel: REDIS_URL names a
	// sentinel, further ones as addr= parameters, and master_name=.
	Sentinel Mode = "sentinel"
	// Cluster is Redis Cluster: REDIS_URL names a node, further ones as
	// addr= parameters; the client discovers the rest.
	Cluster Mode = "cluster"
)

// Modes lists the modes, in the order the documentation gives them.
func Modes() []Mode { return []Mode{Single, Sentinel, Cluster} }

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	switch m {
	case Single, Sentinel, Cluster:
		return true
	}
	return false
}

// errBadURL never carries the URL: it may hold a password.
var errBadURL = errors.New("not a valid Redis URL for this mode")

// NewClient builds the go-redis client of mode m from url (go-redis's URL
// form for that mode). The client connects lazily: Redis may be down when
// the process starts, and its users degrade until it answers
// (INV-MCP-XC-002). Deadlines come from each operation's context
// (Timeouts), not from the client's own read timeout.
func NewClient(m Mode, url string) (redis.UniversalClient, error) {
	build, err := parse(m, url)
	if err != nil {
		return nil, err
	}
	return build(), nil
}

// CheckURL reports whether url is a valid REDIS_URL for mode m, as
// NewClient would take it, without building a client. Its errors never
// carry the URL, which may hold a password.
func CheckURL(m Mode, url string) error {
	_, err := parse(m, url)
	return err
}

// dialOnce is the dial attempts per new connection. go-redis's default,
// five attempts 100 ms apart, made every operation on a Redis that
// refuses connections wait out its whole bound (100 ms on a request's
// path, 1 s to create a session) before failing; one attempt fails it at
// once. Deciding that Redis is down, and when to try it again, is the
// breaker's job (Conn), not a retry loop inside one operation.
const dialOnce = 1

// parse reads url in mode m's form and returns what builds its client.
func parse(m Mode, url string) (func() redis.UniversalClient, error) {
	switch m {
	case Single, "":
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisURL (mode %s): %w", Single, errBadURL)
		}
		o.ContextTimeoutEnabled = true
		o.DialerRetries = dialOnce
		return func() redis.UniversalClient { return redis.NewClient(o) }, nil
	case Sentinel:
		o, err := redis.ParseFailoverURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisURL (mode %s): %w", m, errBadURL)
		}
		if o.MasterName == "" {
			return nil, fmt.Errorf("redisURL (mode %s): the master_name parameter is required", m)
		}
		o.ContextTimeoutEnabled = true
		o.DialerRetries = dialOnce
		return func() redis.UniversalClient { return redis.NewFailoverClient(o) }, nil
	case Cluster:
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisURL (mode %s): %w", m, errBadURL)
		}
		o.ContextTimeoutEnabled = true
		o.DialerRetries = dialOnce
		return func() redis.UniversalClient { return redis.NewClusterClient(o) }, nil
	}
	return nil, fmt.Errorf("redis.mode: %q is not one of single, sentinel, cluster", m)
}

// Endpoint names the Redis that url reaches in mode m — the mode, the
// addresses (sorted), the master's name for Sentinel and the database —
// without its credentials or options: replicas of one deployment get the
// same name from their REDIS_URLs even when those list the nodes in
// another order or carry other passwords.
func Endpoint(m Mode, url string) (string, error) {
	var parts []string
	switch m {
	case Single, "":
		o, err := redis.ParseURL(url)
		if err != nil {
			return "", fmt.Errorf("redisURL (mode %s): %w", Single, errBadURL)
		}
		// Without the mode's name, as before modes existed: a single-node
		// deployment keeps its name across the upgrade.
		parts = []string{o.Network, o.Addr, strconv.Itoa(o.DB)}
	case Sentinel:
		o, err := redis.ParseFailoverURL(url)
		if err != nil {
			return "", fmt.Errorf("redisURL (mode %s): %w", m, errBadURL)
		}
		parts = append([]string{string(m), o.MasterName, strconv.Itoa(o.DB)}, sorted(o.SentinelAddrs)...)
	case Cluster:
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			return "", fmt.Errorf("redisURL (mode %s): %w", m, errBadURL)
		}
		parts = append([]string{string(m)}, sorted(o.Addrs)...)
	default:
		return "", fmt.Errorf("redis.mode: %q is not one of single, sentinel, cluster", m)
	}
	return strings.Join(parts, "\x00"), nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
