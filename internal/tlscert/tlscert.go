// Package tlscert serves a certificate and key pair from files and picks up
// a renewed pair without a restart: cert-manager and similar tools rewrite
// the files of a mounted Secret in place.
//
// The files are checked at most once per interval, from the handshake
// that needs the certificate, so there is no goroutine to stop and an idle
// server does no work. A pair that fails to load (a renewal caught
// half-written, a key that does not match) keeps the previous pair in
// service, and is tried again at the next check.
package tlscert

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Reloader holds the current pair.
type Reloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               zerolog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	certPEM []byte // the file contents cert was made from
	keyPEM  []byte
	checked time.Time
}

// New loads the pair; the error says which file is wrong. interval is how
// often the files are checked for a new pair.
func New(certFile, keyFile string, interval time.Duration, log zerolog.Logger) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, interval: interval, log: log, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = r.now()
	return r, nil
}

// load reads both files and, if they changed, parses and installs them.
// r.mu is held, or r is not shared yet.
func (r *Reloader) load() error {
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return fmt.Errorf("tls.certFile: %w", err)
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return fmt.Errorf("tls.keyFile: %w", err)
	}
	if r.cert != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("tls.certFile and tls.keyFile: %w", err)
	}
	replaced := r.cert != nil
	r.cert, r.certPEM, r.keyPEM = &cert, certPEM, keyPEM
	if replaced {
		ev := r.log.Info().Str("certFile", r.certFile)
		if cert.Leaf != nil {
			ev = ev.Time("notAfter", cert.Leaf.NotAfter)
		}
		ev.Msg("TLS certificate reloaded")
	}
	return nil
}

// GetCertificate is for tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= r.interval {
		r.checked = now
		if err := r.load(); err != nil {
			r.log.Error().Err(err).Msg("TLS certificate not reloaded; the previous one stays in service")
		}
	}
	return r.cert, nil
}

// Config is a server TLS configuration serving r's pair: TLS 1.2 at
// least, HTTP/2 and HTTP/1.1 offered (an SSE stream works over either).
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
