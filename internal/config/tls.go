package config

import "time"

// Environment variables of the tls section; a Kubernetes Deployment mounts
// the Secret and points these at its files.
const (
	EnvTLSCertFile = "MCP_TLS_CERT_FILE" // tls.certFile
	EnvTLSKeyFile  = "MCP_TLS_KEY_FILE"  // tls.keyFile
)

// TLS serves HTTPS directly; without it the server speaks plain HTTP, for a
// TLS-terminating proxy or ingress in front.
type TLS struct {
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	// ReloadIntervalMs is how often the files are checked for a renewed
	// pair.
	ReloadIntervalMs int64 `yaml:"reloadIntervalMs"`
}

// Enabled reports whether HTTPS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// ReloadInterval is ReloadIntervalMs as a duration.
func (t TLS) ReloadInterval() time.Duration { return ms(t.ReloadIntervalMs) }

func defaultTLS() TLS { return TLS{ReloadIntervalMs: 30_000} }

func (c Config) validateTLS(bad func(key string, value any, want string), intRange func(key string, v, lo, hi int64, want string)) {
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", nil, "set both certFile and keyFile (MCP_TLS_CERT_FILE, MCP_TLS_KEY_FILE), or neither")
	}
	intRange("tls.reloadIntervalMs", c.TLS.ReloadIntervalMs, 1000, 86_400_000, "1000 to 86400000 milliseconds")
}
