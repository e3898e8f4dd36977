package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/tlscert/tlstest"
)

// protoRecorder remembers the protocol of every response.
type protoRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	protos map[string]bool
}

func (p *protoRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		p.protos[r.Method+" "+resp.Proto] = true
		p.mu.Unlock()
	}
	return resp, err
}

func h2Client(pool *x509.CertPool) *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
}

// With tls.certFile and tls.keyFile the server speaks HTTPS, HTTP/2
// included, and a resource update reaches the client over the GET event
// stream on HTTP/2. A renewed certificate is served without a restart.
func TestTLS_HTTP2AndReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := tlstest.WritePair(t, dir, 1)
	cfg := config.Default()
	cfg.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile, ReloadIntervalMs: 1000}
	url, _ := runServer(t, cfg, io.Discard)
	url = strings.Replace(url, "http://", "https://", 1)

	rec := &protoRecorder{base: h2Client(pool), protos: map[string]bool{}}
	var got notified
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "h2", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: got.handler}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}}, legacyEra) // it subscribes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	const uri = "memory://default/tls"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, call(t, cs, "memory_store", map[string]any{"key": "tls", "value": 1}), "store over h2")
	got.waitFor(t, uri)
	rec.mu.Lock()
	if !rec.protos["POST HTTP/2.0"] || !rec.protos["GET HTTP/2.0"] {
		t.Errorf("protocols seen: %v, want POST and GET over HTTP/2.0", rec.protos)
	}
	rec.mu.Unlock()

	resp, err := (&http.Client{Transport: h2Client(pool)}).Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for h, want := range map[string]string{"Strict-Transport-Security": "max-age=31536000", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
		if resp.Header.Get(h) != want {
			t.Errorf("%s = %q, want %q", h, resp.Header.Get(h), want)
		}
	}

	// Renew: a new pair under the same file names; new connections get it.
	_, _, pool2 := tlstest.WritePair(t, dir, 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := (&http.Client{Transport: h2Client(pool2)}).Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
		if err == nil {
			serial := resp.TLS.PeerCertificates[0].SerialNumber.Int64()
			resp.Body.Close()
			if serial == 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate is not served 10s later (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
