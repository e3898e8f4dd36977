package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// refusingAuth refuses requests without an Authorization header.
type refusingAuth struct{}

func (refusingAuth) Authenticate(r *http.Request) (auth.Principal, *auth.Failure) {
	if r.Header.Get("Authorization") == "" {
		return auth.Principal{}, &auth.Failure{Status: http.StatusUnauthorized, Description: "no credentials"}
	}
	return auth.Principal{ID: "p", Tenant: "t"}, nil
}

// Every answer given without reading the body reaches a client that
// declared a body and sent none at once, and its connection is closed
// within unwantedBodyGrace: net/http does not wait for the rest of the
// body for as long as the body deadline (an hour here), or for ever.
func TestUnreadBodyClosesTheConnection(t *testing.T) {
	guarded := newHarness(t, withOpts(func(o *Options) {
		o.ReadBodyTimeout = time.Hour
		o.Auth = refusingAuth{}
		o.Limit = func(context.Context, auth.Principal) (bool, time.Duration) { return false, time.Second }
	}))
	open := newHarness(t, withOpts(func(o *Options) { o.ReadBodyTimeout = time.Hour }))
	const authz = "Authorization: Bearer x\r\n"
	for _, tc := range []struct {
		name    string
		h       *harness
		method  string
		headers string
		length  int
		status  int
	}{
		{"origin refused", guarded, "POST", "Origin: https://evil.example\r\n", 1000, http.StatusForbidden},
		{"no credentials", guarded, "POST", "", 1000, http.StatusUnauthorized},
		{"over the request budget", guarded, "POST", authz, 1000, http.StatusTooManyRequests},
		{"unsupported content type", open, "POST", "Content-Type: text/plain\r\n", 1000, http.StatusUnsupportedMediaType},
		{"not acceptable", open, "POST", "Accept: text/html\r\n", 1000, http.StatusNotAcceptable},
		{"method not allowed", open, "PUT", "", 1000, http.StatusMethodNotAllowed},
		{"declared body over the limit", open, "POST", "", 100 << 10, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.h.TS.Listener.Addr().String()
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hdr := tc.headers
			if !strings.Contains(hdr, "Content-Type") {
				hdr += "Content-Type: application/json\r\n"
			}
			if !strings.Contains(hdr, "Accept") {
				hdr += "Accept: application/json\r\n"
			}
			fmt.Fprintf(c, "%s /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n", tc.method, host, hdr, tc.length)
			_ = c.SetReadDeadline(time.Now().Add(th.WaitLong)) // a hang guard
			b, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("got %q, then %v: the connection was not closed", b, err)
			}
			if want := fmt.Sprintf("HTTP/1.1 %d ", tc.status); !strings.HasPrefix(string(b), want) || !strings.Contains(string(b), "Connection: close") {
				t.Fatalf("got %q, want %s with Connection: close", b, want)
			}
		})
	}
}
