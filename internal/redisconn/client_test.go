package redisconn

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestNewClient(t *testing.T) {
	tests := []struct {
		name, url string
		mode      Mode
		wantType  string
		wantErr   string
	}{
		{"single", "redis://:s3cret@127.0.0.1:6379/2", Single, "*redis.Client", ""},
		{"default mode is single", "redis://127.0.0.1:6379", "", "*redis.Client", ""},
		{"cluster with further nodes", "redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379", Cluster, "*redis.ClusterClient", ""},
		{"sentinel", "redis://10.0.0.1:26379?master_name=mymaster&addr=10.0.0.2:26379", Sentinel, "*redis.Client", ""},
		{"sentinel without a master", "redis://10.0.0.1:26379", Sentinel, "", "master_name"},
		{"a bad URL hides its password", "http://:s3cret@host", Single, "", "not a valid Redis URL"},
		{"a bad cluster URL hides its password", "redis://:s3cret@h:1?bogus=1", Cluster, "", "not a valid Redis URL"},
		{"unknown mode", "redis://h:1", "ring", "", "not one of single, sentinel, cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr := CheckURL(tt.mode, tt.url)
			c, err := NewClient(tt.mode, tt.url)
			if (checkErr == nil) != (err == nil) {
				t.Fatalf("CheckURL says %v, NewClient %v: they must agree", checkErr, err)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("err = %v, want one containing %q and no password", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := typeName(c); got != tt.wantType {
				t.Fatalf("client is %s, want %s", got, tt.wantType)
			}
			// One dial per new connection: a refused connection fails the
			// operation at once, and the breaker decides the rest.
			var dials int
			switch c := c.(type) {
			case *redis.Client:
				dials = c.Options().DialerRetries
			case *redis.ClusterClient:
				dials = c.Options().DialerRetries
			}
			if dials != dialOnce {
				t.Fatalf("the client dials %d times per connection, want %d", dials, dialOnce)
			}
		})
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.Client:
		return "*redis.Client"
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	}
	return "other"
}

// Endpoint names the Redis, not the way a replica spells its URL: the
// node order, the password and the options do not change it; another
// node set, database or master does. A single node's name is what it was
// before modes existed (network, address, database), so a deployment id
// derived from it survives the upgrade.
func TestEndpoint(t *testing.T) {
	tests := []struct {
		name string
		mode Mode
		a, b string
		same bool
	}{
		{"single: password and options", Single, "redis://h:6379/1", "redis://:pw@h:6379/1?dial_timeout=3s", true},
		{"single: another database", Single, "redis://h:6379/1", "redis://h:6379/2", false},
		{"sentinel: sentinels in another order", Sentinel, "redis://s1:26379?addr=s2:26379&master_name=m", "redis://:pw@s2:26379?addr=s1:26379&master_name=m", true},
		{"sentinel: another master", Sentinel, "redis://s1:26379?master_name=m", "redis://s1:26379?master_name=other", false},
		{"cluster: nodes in another order", Cluster, "redis://n1:6379?addr=n2:6379", "redis://n2:6379?addr=n1:6379", true},
		{"cluster: another node", Cluster, "redis://n1:6379?addr=n2:6379", "redis://n1:6379?addr=n3:6379", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Endpoint(tt.mode, tt.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Endpoint(tt.mode, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tt.same || strings.Contains(a+b, "pw") {
				t.Fatalf("%q vs %q: same %v, want %v (and no password)", a, b, a == b, tt.same)
			}
		})
	}
	if got, _ := Endpoint(Single, "redis://h:6379/1"); got != "tcp\x00h:6379\x001" {
		t.Fatalf("a single node's name is %q, want the pre-mode form", got)
	}
	if _, err := Endpoint(Cluster, "http://:s3cret@h"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a bad URL: %v, want an error without the password", err)
	}
}
