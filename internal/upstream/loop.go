package upstream

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
)

// Federation loops. A deployment registered as its own upstream, or two
// deployments federating each other, would feed each tool list back into
// itself: every sync adds a level of prefixes (a_b_a_memory_store, ...)
// and every change sends tools/list_changed to the other side, which
// syncs again. Each deployment has an id, shared by its replicas, and two
// headers carry it:
//
//   - HeaderVia goes on every request to an upstream but tool calls
//     (the handshake, tool and resource lists, pings), naming the
//     deployment that sends it. A server refuses a request naming itself
//     (508 Loop Detected), so a deployment that is its own upstream fails
//     at its first request, before a tool is listed.
//   - HeaderDeployments goes on the answers to such requests: the
//     answering deployment first, then every deployment behind the
//     upstreams whose tools it offers, as their answers told it. A gateway
//     that finds its own id there is listing its own tools back through
//     another deployment (A federates B, B federates A).
//
// A loop through other deployments is seen by every deployment on it, at
// about the same time; if each dropped its upstream, all would, then all
// would reconnect (no loop is visible while nobody offers tools) and
// drop again, for ever. So it is broken at one place only: a deployment
// puts its upstream in error when the upstream's id is greater than its
// own (or is its own). On every cycle of distinct ids some deployment's id
// is smaller than its upstream's, so every loop is broken, and the
// deployment that breaks it stays the same, so it stays broken.
//
// Only the deployments a tool list really comes through are named, so a
// diamond (A federates B and C, B federates C) is no loop. What an
// upstream says about itself can only make that upstream fail, never
// another one, and a client sending HeaderVia only gets its own request
// refused.
const (
	HeaderVia         = "Mcp-Runtime-Via"
	HeaderDeployments = "Mcp-Runtime-Deployments"
)

// maxDeployments bounds the ids read from an upstream's answer and sent
// in this deployment's: a federation is a handful of deployments, and an
// upstream must not make the gateway keep an unbounded list.
const maxDeployments = 64

// maxDeploymentIDLen bounds a deployment id (federation.deploymentId).
const maxDeploymentIDLen = 64

// ValidDeploymentID reports whether id can name a deployment in the
// headers: 1 to 64 characters of [A-Za-z0-9._-].
func ValidDeploymentID(id string) bool {
	if id == "" || len(id) > maxDeploymentIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// RandomDeploymentID is an id for a process that shares nothing with
// another (no Redis): it is a deployment of its own.
func RandomDeploymentID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// NamesDeployment reports whether the header values (comma-separated
// lists, as HeaderVia and HeaderDeployments carry) name id. It does not
// allocate: the server checks HeaderVia on every request that has one.
func NamesDeployment(values []string, id string) bool {
	for _, v := range values {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			if strings.TrimSpace(item) == id {
				return true
			}
		}
	}
	return false
}

// parseDeployments reads HeaderDeployments values: the answering
// deployment (the first id) and every id named, the first included,
// sorted and without repeats; at most maxDeployments, invalid ones
// skipped.
func parseDeployments(values []string) (from string, ids []string) {
	for _, v := range values {
		for v != "" && len(ids) < maxDeployments {
			var item string
			item, v, _ = strings.Cut(v, ",")
			if item = strings.TrimSpace(item); ValidDeploymentID(item) {
				ids = append(ids, item)
			}
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	from = ids[0]
	slices.Sort(ids)
	return from, slices.Compact(ids)
}

// breaksLoop reports whether the deployment self, whose upstream from
// answered naming ids, must put that upstream in error: the answer comes
// back through self, and self is where the loop is broken (see above).
func breaksLoop(self, from string, ids []string) bool {
	return (from == self || self < from) && slices.Contains(ids, self)
}

// reachHeader is the HeaderDeployments value of a deployment with id self
// whose offered upstreams named the deployments in behind: self first,
// then the others sorted, at most maxDeployments in all. It is a
// one-element slice so the server can set it on an answer without
// allocating.
func reachHeader(self string, behind [][]string) []string {
	var all []string
	for _, ids := range behind {
		all = append(all, ids...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	all = slices.DeleteFunc(all, func(id string) bool { return id == self })
	if len(all) > maxDeployments-1 {
		all = all[:maxDeployments-1]
	}
	return []string{strings.Join(append([]string{self}, all...), ",")}
}
