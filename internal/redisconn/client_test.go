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
