package upstream

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestServerSpeakingFirstIsReadAsItsAnswer: a server that sends a banner
// as soon as it accepts (NATS here) is always classified from the answer
// to our request, never from net/http dropping a connection on which the
// banner arrived first.
func TestServerSpeakingFirstIsReadAsItsAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("INFO {\"server_id\":\"SECRETID\",\"version\":\"2.10.7\"}\r\n"))
				_, _ = c.Read(make([]byte, 4096)) // the request, then close
			}()
		}
	}()
	client := &http.Client{Transport: pooledTransport(nil)}
	for i := range 50 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/mcp", strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("try %d: a banner was read as an HTTP answer (%s)", i, resp.Status)
		}
		if got := transportFailure(err).msg; got != "not an MCP server: the answer is not HTTP" {
			t.Fatalf("try %d: classified as %q (%v), want the banner read as the answer", i, got, err)
		}
	}
}
