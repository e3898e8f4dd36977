package tlscert

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/tlscert/tlstest"
)

func serial(t *testing.T, r *Reloader) int64 {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil || c == nil || c.Leaf == nil {
		t.Fatalf("GetCertificate: %v %v", c, err)
	}
	return c.Leaf.SerialNumber.Int64()
}

// A renewed pair written over the files is served after the next check;
// a broken one is not, and the previous pair stays in service.
func TestReloadsRenewedPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := tlstest.WritePair(t, dir, 1)
	r, err := New(certFile, keyFile, 10*time.Second, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	if got := serial(t, r); got != 1 {
		t.Fatalf("serial %d, want 1", got)
	}
	tlstest.WritePair(t, dir, 2)
	if got := serial(t, r); got != 1 {
		t.Fatalf("reloaded before the interval: serial %d", got)
	}
	now = now.Add(11 * time.Second)
	if got := serial(t, r); got != 2 {
		t.Fatalf("serial %d after renewal, want 2", got)
	}
	if err := os.WriteFile(keyFile, []byte("half-written"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(11 * time.Second)
	if got := serial(t, r); got != 2 {
		t.Fatalf("a broken pair replaced the good one: serial %d", got)
	}
}

func TestNewNamesTheBadFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := tlstest.WritePair(t, dir, 1)
	for _, tc := range []struct{ cert, key, want string }{
		{dir + "/missing.crt", keyFile, "tls.certFile"},
		{certFile, dir + "/missing.key", "tls.keyFile"},
		{keyFile, certFile, "tls.certFile and tls.keyFile"},
	} {
		if _, err := New(tc.cert, tc.key, time.Second, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %s) = %v, want an error naming %s", tc.cert, tc.key, err, tc.want)
		}
	}
}
