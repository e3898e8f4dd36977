package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterTimeout bounds how long StartCluster waits for the cluster to
// form and FailOver for a replica to take over.
const clusterTimeout = 30 * time.Second

// Cluster is a private Redis Cluster of three masters and three replicas,
// child processes owned by one test, for what the shared cluster
// (ClusterURL) must not be put through: losing a node. Its nodes fail
// over after a second without their master (cluster-node-timeout 1000).
type Cluster struct {
	t     testing.TB
	nodes []*Server
}

// StartCluster runs six cluster nodes on free ports, joins them with
// redis-cli --cluster create and waits until every slot is served and
// every replica is attached.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redistest: redis-cli is not on PATH (apt-get install redis-server): %v", err)
	}
	c := &Cluster{t: t}
	create := []string{"--cluster", "create"}
	for range 6 {
		s := &Server{t: t, dir: t.TempDir(), args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
		}}
		var err error
		for range 5 {
			if s.port, err = clusterPort(); err != nil {
				break
			}
			if err = s.start(); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("redistest: start a cluster node: %v", err)
		}
		t.Cleanup(s.Stop)
		c.nodes = append(c.nodes, s)
		create = append(create, s.Addr())
	}
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.await("the cluster to form", func() bool { return c.formed(c.nodes, 3) })
	return c
}

// URL is the cluster's REDIS_URL for redis.mode cluster.
func (c *Cluster) URL() string {
	u := "redis://" + c.nodes[0].Addr()
	for i, n := range c.nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr()
	}
	return u
}

// FailOver kills the master that serves key's slot, as a lost node would
// be, and waits until its replica serves the slot in its place. It
// returns the killed master's address. whileDown, if any, are called once
// the master is dead, before a replica has taken over: what they set off
// meets a slot that nobody serves.
func (c *Cluster) FailOver(key string, whileDown ...func()) string {
	c.t.Helper()
	slot := c.slotOf(key)
	master := c.owner(c.nodes, slot)
	var victim *Server
	var rest []*Server
	for _, n := range c.nodes {
		if n.Addr() == master {
			victim = n
		} else {
			rest = append(rest, n)
		}
	}
	if victim == nil {
		c.t.Fatalf("redistest: no node serves slot %d", slot)
	}
	victim.Stop()
	for _, f := range whileDown {
		f()
	}
	c.await("a replica to take over slot "+strconv.Itoa(slot), func() bool {
		o := c.owner(rest, slot)
		return o != "" && o != master && c.formed(rest, 2)
	})
	return master
}

// Promote makes a replica of the master serving key's slot take its
// place by a manual failover (CLUSTER FAILOVER), as an operator's
// maintenance does: the old master stays up, as a replica, and tells its
// clients that the slot's channels are gone (sunsubscribe). It waits
// until the replica serves the slot, and returns its address.
func (c *Cluster) Promote(key string) string {
	c.t.Helper()
	slot := c.slotOf(key)
	master := c.owner(c.nodes, slot)
	nodes, err := cli(c.nodes[0].port, "cluster", "nodes")
	if err != nil {
		c.t.Fatalf("redistest: cluster nodes: %v", err)
	}
	var masterID string
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	for _, line := range lines {
		if f := strings.Fields(line); len(f) > 1 && strings.SplitN(f[1], "@", 2)[0] == master {
			masterID = f[0]
		}
	}
	var replica *Server
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.Contains(f[2], "slave") || f[3] != masterID {
			continue
		}
		addr := strings.SplitN(f[1], "@", 2)[0]
		for _, n := range c.nodes {
			if n.Addr() == addr {
				replica = n
			}
		}
	}
	if replica == nil {
		c.t.Fatalf("redistest: no replica of %s (slot %d) to promote", master, slot)
	}
	if out, err := cli(replica.port, "cluster", "failover"); err != nil || !strings.Contains(out, "OK") {
		c.t.Fatalf("redistest: cluster failover on %s: %q, %v", replica.Addr(), out, err)
	}
	c.await("the replica to serve slot "+strconv.Itoa(slot), func() bool {
		return c.owner(c.nodes, slot) == replica.Addr() && c.formed(c.nodes, 3)
	})
	return replica.Addr()
}

// slotOf is key's hash slot.
func (c *Cluster) slotOf(key string) int {
	c.t.Helper()
	out, err := cli(c.nodes[0].port, "cluster", "keyslot", key)
	if err != nil {
		c.t.Fatalf("redistest: cluster keyslot: %v", err)
	}
	slot, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		c.t.Fatalf("redistest: cluster keyslot answered %q", out)
	}
	return slot
}

// owner is the address of the master serving slot, as the first of nodes
// that answers sees it; "" if none does.
func (c *Cluster) owner(nodes []*Server, slot int) string {
	for _, n := range nodes {
		out, err := cli(n.port, "cluster", "nodes")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				a, errA := strconv.Atoi(lo)
				b, errB := strconv.Atoi(hi)
				if errA == nil && errB == nil && a <= slot && slot <= b {
					return strings.SplitN(f[1], "@", 2)[0]
				}
			}
		}
		return ""
	}
	return ""
}

// formed: every one of nodes says the cluster is ok and sees three
// masters that are not failed and at least replicas replicas, and each
// of nodes that is a replica is in sync with its master.
func (c *Cluster) formed(nodes []*Server, replicas int) bool {
	for _, n := range nodes {
		info, err := cli(n.port, "cluster", "info")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		out, err := cli(n.port, "cluster", "nodes")
		if err != nil {
			return false
		}
		masters, slaves := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) < 3 || strings.Contains(f[2], "fail"):
			case strings.Contains(f[2], "master"):
				masters++
			case strings.Contains(f[2], "slave"):
				slaves++
			}
		}
		if masters != 3 || slaves < replicas {
			return false
		}
		// A replica attached but not yet synced (the first sync comes
		// seconds after the join) cannot take over: its data is too old.
		repl, err := cli(n.port, "info", "replication")
		if err != nil || strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return false
		}
	}
	return true
}

// await polls cond until it holds, and fails the test with what the
// first live node sees of the cluster if it does not within
// clusterTimeout.
func (c *Cluster) await(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			var seen string
			for _, n := range c.nodes {
				if out, err := cli(n.port, "cluster", "nodes"); err == nil {
					seen = out
					break
				}
			}
			c.t.Fatalf("redistest: waited %v for %s; the cluster's nodes:\n%s", clusterTimeout, what, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cli runs redis-cli against the node on port.
func cli(port int, args ...string) (string, error) {
	out, err := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(port)}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("redis-cli -p %d %s: %w", port, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// clusterPort is a free port whose cluster bus port (the port plus
// 10000) is free too.
func clusterPort() (int, error) {
	for range 20 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port with a free cluster bus port in 20 tries")
}
