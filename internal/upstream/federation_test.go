package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestParseNetwork(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"169.254.0.0/16", "169.254.0.0/16", true},
		{"169.254.3.4/16", "169.254.0.0/16", true},
		{"100.100.100.200", "100.100.100.200/32", true},
		{"fd00:ec2::254", "fd00:ec2::254/128", true},
		{"fe80::/10", "fe80::/10", true},
		{"169.254.0.0/33", "", false},
		{"metadata.google.internal", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		p, err := ParseNetwork(tt.in)
		if (err == nil) != tt.ok || (tt.ok && p.String() != tt.want) {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %s (ok %v)", tt.in, p, err, tt.want, tt.ok)
		}
	}
	for _, s := range DefaultDeniedNetworks() {
		if _, err := ParseNetwork(s); err != nil {
			t.Errorf("default %q: %v", s, err)
		}
	}
}

func defaultDenied(t *testing.T) deniedNetworks {
	t.Helper()
	var d deniedNetworks
	for _, s := range DefaultDeniedNetworks() {
		p, err := ParseNetwork(s)
		if err != nil {
			t.Fatal(err)
		}
		d = append(d, p)
	}
	return d
}

// The dialer's check sees resolved addresses in every form the kernel
// may be given them.
func TestDeniedNetworksAtTheDial(t *testing.T) {
	d := defaultDenied(t)
	tests := []struct {
		addr   string
		denied bool
	}{
		{"169.254.169.254:80", true},
		{"[::ffff:169.254.169.254]:80", true}, // IPv4 written as IPv6
		{"[fe80::1%eth0]:80", true},           // with a zone
		{"[fd00:ec2::254]:80", true},
		{"100.100.100.200:80", true},
		{"168.63.129.16:80", true},
		{"10.0.0.7:4222", false},
		{"127.0.0.1:8080", false},
		{"[::1]:8080", false},
	}
	for _, tt := range tests {
		err := d.control("tcp", tt.addr, nil)
		var de *deniedError
		if got := errors.As(err, &de); got != tt.denied {
			t.Errorf("%s: err = %v, want denied %v", tt.addr, err, tt.denied)
		}
	}
}

func TestCheckNetworksAtRegistration(t *testing.T) {
	d := defaultDenied(t)
	tests := []struct {
		url    string
		denied bool
	}{
		{"http://169.254.169.254/latest/meta-data", true},
		{"http://[fd00:ec2::254]/mcp", true},
		{"http://[::ffff:a9fe:a9fe]/mcp", true},
		{"http://metadata.google.internal/mcp", false}, // the dialer sees what it resolves to
		{"https://10.1.2.3:8443/mcp", false},
	}
	for _, tt := range tests {
		err := Config{ID: "a", URL: tt.url}.CheckNetworks(d)
		var fe *FieldError
		if got := errors.As(err, &fe) && fe.Field == "url" && strings.Contains(fe.Reason, "federation.deniedNetworks"); got != tt.denied {
			t.Errorf("%s: err = %v, want denied %v", tt.url, err, tt.denied)
		}
	}
}

// Every transport failure is described in words of ours: none of the
// peer's bytes, no socket address.
func TestTransportFailureIsClassified(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4222}, Err: err}
	}
	tests := []struct {
		name string
		err  error
		want string
		kind error
	}{
		{"refused", opErr(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused", nil},
		{"reset", opErr(os.NewSyscallError("read", syscall.ECONNRESET)), "the server closed the connection", nil},
		{"unreachable", opErr(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "host unreachable", nil},
		{"no such host", &net.DNSError{Err: "no such host", Name: "mcp.internal", Server: "10.0.0.53:53", IsNotFound: true}, "no such host", nil},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "mcp.internal", Server: "10.0.0.53:53", IsTimeout: true}, "DNS lookup of the host timed out", nil},
		{"denied", opErr(&deniedError{network: netip.MustParsePrefix("169.254.0.0/16")}), "169.254.0.0/16, which federation.deniedNetworks denies", errDenied},
		{"a banner", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w",
			errors.New(`malformed HTTP response "INFO {\"server_id\":\"NCX\",\"version\":\"2.10.7\"}"`)), "not an MCP server: the answer is not HTTP", nil},
		{"plain HTTP on TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", RecordHeader: [5]byte{'H', 'T', 'T', 'P', '/'}},
			"TLS: the server answers plain HTTP", nil},
		{"not TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", RecordHeader: [5]byte{'I', 'N', 'F', 'O', ' '}},
			"TLS: the server does not speak TLS", nil},
		{"unknown CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "signed by an unknown authority", nil},
		{"wrong name", &tls.CertificateVerificationError{Err: x509.HostnameError{Host: "internal-db.corp"}}, "not valid for its host name", nil},
		{"something else", errors.New("peer said: secret-node-7"), "the connection failed", nil},
	}
	for _, tt := range tests {
		f := transportFailure(tt.err)
		if !strings.Contains(f.Error(), tt.want) {
			t.Errorf("%s: %q, want it to say %q", tt.name, f.Error(), tt.want)
		}
		for _, leak := range []string{"10.0.0.7", "4222", "10.0.0.53", "INFO", "NCX", "2.10.7", "internal-db", "secret-node-7", "mcp.internal"} {
			if strings.Contains(f.Error(), leak) {
				t.Errorf("%s: %q shows %q", tt.name, f.Error(), leak)
			}
		}
		if tt.kind != nil && !errors.Is(f, tt.kind) {
			t.Errorf("%s: not of kind %v", tt.name, tt.kind)
		}
	}
}

func TestStatusFailure(t *testing.T) {
	tests := []struct {
		code       int
		hadSession bool
		want       string
		loop       bool
	}{
		{508, false, "loop: the upstream is this deployment", true},
		{404, false, "not an MCP endpoint: HTTP 404 (Not Found)", false},
		{404, true, "the server no longer knows the session", false},
		{401, false, "the server refused the credentials: HTTP 401 (Unauthorized)", false},
		{500, false, "the server failed: HTTP 500 (Internal Server Error)", false},
		{299, false, "HTTP 299", false}, // no reason phrase: none made up
	}
	for _, tt := range tests {
		f := statusFailure(tt.code, tt.hadSession)
		if !strings.Contains(f.Error(), tt.want) || errors.Is(f, errLoop) != tt.loop {
			t.Errorf("%d: %q (loop %v), want %q (loop %v)", tt.code, f.Error(), errors.Is(f, errLoop), tt.want, tt.loop)
		}
	}
}

// A JSON-RPC error is shown by its code until the server has shown it
// speaks MCP; after that its message is shown, cut and cleaned.
func TestWireFailure(t *testing.T) {
	w := &jsonrpc.Error{Code: -32601, Message: "method initialize does not exist on node secret-node-7"}
	if got := wireFailure(w, false).Error(); strings.Contains(got, "secret") || !strings.Contains(got, "-32601") {
		t.Errorf("before initialize: %q", got)
	}
	long := &jsonrpc.Error{Code: -32602, Message: "bad\r\nlevel=error forged\x00 " + strings.Repeat("x", 500)}
	got := wireFailure(long, true).Error()
	if strings.ContainsAny(got, "\r\n\x00") || len(got) > maxPeerText+40 || !strings.HasPrefix(got, "JSON-RPC error -32602: bad") {
		t.Errorf("after initialize: %q", got)
	}
}

func TestLoopHeaders(t *testing.T) {
	if !NamesDeployment([]string{"a, b", "c"}, "c") || !NamesDeployment([]string{"a, b"}, "b") || NamesDeployment([]string{"ab"}, "a") {
		t.Error("NamesDeployment")
	}
	if n := testing.AllocsPerRun(100, func() { NamesDeployment([]string{"x1, x2, x3"}, "x3") }); n != 0 {
		t.Errorf("NamesDeployment allocates %v times per call", n)
	}
	from, ids := parseDeployments([]string{"dep-b, dep-a, bad id!, dep-a", "dep-c"})
	if from != "dep-b" || !slices.Equal(ids, []string{"dep-a", "dep-b", "dep-c"}) {
		t.Errorf("parseDeployments: %q %q", from, ids)
	}
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("d%d", i))
	}
	if _, ids := parseDeployments([]string{strings.Join(many, ",")}); len(ids) != maxDeployments {
		t.Errorf("%d ids kept of 1000, want %d", len(ids), maxDeployments)
	}
	if got := reachHeader("dep-b", [][]string{{"dep-c", "dep-a"}, {"dep-a", "dep-b"}}); !slices.Equal(got, []string{"dep-b,dep-a,dep-c"}) {
		t.Errorf("reachHeader = %q", got)
	}
	// The loop is broken where the id is the smaller one, and always at
	// one's own id.
	tests := []struct {
		self, from string
		ids        []string
		breaks     bool
	}{
		{"dep-a", "dep-b", []string{"dep-a", "dep-b"}, true},
		{"dep-b", "dep-a", []string{"dep-a", "dep-b"}, false},
		{"dep-a", "dep-a", []string{"dep-a"}, true},
		{"dep-a", "dep-b", []string{"dep-b", "dep-c"}, false},
	}
	for _, tt := range tests {
		if got := breaksLoop(tt.self, tt.from, tt.ids); got != tt.breaks {
			t.Errorf("breaksLoop(%s, %s, %v) = %v", tt.self, tt.from, tt.ids, got)
		}
	}
}

// An upstream that refuses the gateway's requests as looping (508), or
// whose answers name the gateway behind it, is in error saying so, with
// no retries and no tools; one that names only other deployments is
// served, and the deployments it named are in the gateway's own header.
func TestLoopDetected(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	answer := func(deployments string, status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(HeaderVia) != "dep-m" {
				http.Error(w, "no Via", http.StatusBadRequest)
				return
			}
			if status != 0 {
				w.WriteHeader(status)
				return
			}
			w.Header().Set(HeaderDeployments, deployments)
			p.srv.Config.Handler.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	self, through, other := cfg("self", answer("", http.StatusLoopDetected)), cfg("through", answer("dep-z,dep-m", 0)), cfg("other", answer("dep-z,dep-y", 0))
	m := testManager(t, Options{DeploymentID: "dep-m", Declared: []Config{self, through, other}})
	start(t, m)
	for id, want := range map[string]string{"self": "loop: the upstream is this deployment", "through": "loop: the upstream's answers come through this deployment"} {
		st := waitState(t, m, id, StateError)
		if !strings.Contains(st.LastError, want) || st.ToolCount != 0 {
			t.Errorf("%s: %+v", id, st)
		}
	}
	waitState(t, m, "other", StateConnected)
	if got := m.Deployments(); !slices.Equal(got, []string{"dep-m,dep-y,dep-z"}) {
		t.Errorf("Deployments() = %q", got)
	}
	if got := canonicals(m.Tools()); !slices.Equal(got, []string{"other.search"}) {
		t.Errorf("tools %v", got)
	}
}

// The tool-list limits are checked while paging and refuse the list
// whole, naming the key.
func TestToolListLimits(t *testing.T) {
	p := newPeer(t)
	for i := range 30 {
		p.toolSchema(fmt.Sprintf("t%02d", i), `{"type":"object","description":"`+strings.Repeat("x", 1000)+`"}`, nil, nil)
	}
	tests := []struct {
		name  string
		opts  Options
		want  string
		tools int
	}{
		{"within both", Options{MaxToolsPerServer: 30, MaxToolListBytes: 1 << 20}, "", 30},
		{"too many tools", Options{MaxToolsPerServer: 29}, "more than 29 tools (federation.maxToolsPerUpstream)", 0},
		{"too many bytes", Options{MaxToolListBytes: 10_000}, "larger than 10000 bytes (federation.maxToolListBytes)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Declared = []Config{cfg("a", p.url())}
			m := testManager(t, o)
			_, err := m.Refresh(ctx(t), "a")
			st := status(t, m, "a")
			if tt.want == "" {
				if err != nil || st.ToolCount != tt.tools {
					t.Fatalf("err %v, status %+v", err, st)
				}
				return
			}
			if !errors.Is(err, errLimit) || !strings.Contains(st.LastError, tt.want) || st.ToolCount != 0 || st.State != StateError {
				t.Errorf("err %v, status %+v", err, st)
			}
		})
	}
}
