package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeConfig writes a YAML file into a fresh temporary directory.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// load calls LoadWithOutput with usage output discarded.
func load(args []string, m map[string]string) (Config, error) {
	return LoadWithOutput(args, env(m), io.Discard)
}

const fullYAML = `
listen: "0.0.0.0:9090"
allowedOrigins: ["https://app.example.com", "http://localhost:3000/"]
logLevel: debug
logFormat: console
toolNameSeparator: "-"
transport:
  maxBodyBytes: 1048576
  sessionIdleTimeoutMs: 60000
  keepAliveIntervalMs: 5000
  eventLogSize: 64
  readHeaderTimeoutMs: 2000
  readBodyTimeoutMs: 5000
  writeTimeoutMs: 6000
  pageSize: 50
  maxSessions: 500
  maxSessionsPerTenant: 200
  maxClientInfoBytes: 2048
  maxClientResponseBytes: 65536
shutdownGraceMs: 0
`

func TestLoadDefaults(t *testing.T) {
	got, err := load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load() = %+v, want Default() %+v", got, want)
	}
	// A nil getenv is an empty environment.
	if _, err := LoadWithOutput(nil, nil, io.Discard); err != nil {
		t.Errorf("LoadWithOutput with nil getenv: %v", err)
	}
}

func TestLoadYAMLOverrides(t *testing.T) {
	path := writeConfig(t, fullYAML)
	want := Config{
		Listen:            "0.0.0.0:9090",
		AllowedOrigins:    []string{"https://app.example.com", "http://localhost:3000"},
		LogLevel:          "debug",
		LogFormat:         "console",
		ToolNameSeparator: "-",
		Transport: Transport{
			MaxBodyBytes:         1 << 20,
			SessionIdleTimeoutMs: 60000,
			KeepAliveIntervalMs:  5000,
			EventLogSize:         64,
			ReadHeaderTimeoutMs:  2000,
			ReadBodyTimeoutMs:    5000,
			WriteTimeoutMs:       6000,
			PageSize:             50,
			MaxSessions:          500, MaxStreamsPerSession: 32, MaxConnections: 4096,
			MaxSessionsPerTenant: 200, MaxClientInfoBytes: 2048, MaxClientResponseBytes: 65536,
			MaxCapabilitiesBytes: transport.DefaultMaxCapabilitiesBytes, MaxInitializeDepth: transport.DefaultMaxInitializeDepth,
		},
		ShutdownGraceMs: 0,
		Timeouts:        defaultTimeouts(),
		Limits:          defaultLimits(),
		Response:        defaultResponse(),
		Cache:           defaultCache(),
		Store:           defaultStore(),
		Redis:           defaultRedis(),
		Traces:          defaultTraces(),
		StateSync:       defaultStateSync(),
		Federation:      defaultFederation(),
		Auth:            auth.Default(),
		RateLimits:      defaultRateLimits(),
		TLS:             defaultTLS(),
		RequestState:    RequestState{TTLMs: 600_000},
		Telemetry:       Telemetry{MetricIntervalMs: 60_000},
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-config", path}, nil},
		{"env", nil, map[string]string{EnvConfig: path}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := load(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load() = %+v\nwant %+v", got, want)
			}
		})
	}
}

// Keys absent from the file keep their defaults, including siblings of a
// key set inside transport.
func TestLoadPartialYAMLKeepsDefaults(t *testing.T) {
	path := writeConfig(t, "transport:\n  pageSize: 7\n")
	got, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Transport.PageSize = 7
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load() = %+v, want %+v", got, want)
	}
}

func TestLoadEmptyYAML(t *testing.T) {
	for _, content := range []string{"", "# nothing here\n", "~\n", "---\n", "logLevel: warn\n---\n"} {
		path := writeConfig(t, content)
		got, err := load([]string{"-config", path}, nil)
		if err != nil {
			t.Errorf("Load(%q) = %v, want nil", content, err)
			continue
		}
		if got.Listen != Default().Listen {
			t.Errorf("Load(%q).Listen = %q, want the default", content, got.Listen)
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	path := writeConfig(t, "listen: \"127.0.0.1:1001\"\nlogLevel: warn\nlogFormat: console\nallowedOrigins: [\"https://yaml.example\"]\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(*Config)
	}{
		{
			name: "yaml beats defaults",
			args: []string{"-config", path},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:1001"
				c.LogLevel = "warn"
				c.LogFormat = "console"
				c.AllowedOrigins = []string{"https://yaml.example"}
			},
		},
		{
			name: "env beats yaml",
			args: []string{"-config", path},
			env: map[string]string{
				EnvAddr:           "127.0.0.1:2002",
				EnvLogLevel:       "error",
				EnvLogFormat:      "json",
				EnvAllowedOrigins: "https://env.example",
			},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:2002"
				c.LogLevel = "error"
				c.LogFormat = "json"
				c.AllowedOrigins = []string{"https://env.example"}
			},
		},
		{
			name: "flag beats env",
			args: []string{"-config", path, "-addr", "127.0.0.1:3003", "-log-level=trace"},
			env:  map[string]string{EnvAddr: "127.0.0.1:2002", EnvLogLevel: "error"},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:3003"
				c.LogLevel = "trace"
				c.LogFormat = "console"
				c.AllowedOrigins = []string{"https://yaml.example"}
			},
		},
		{
			name: "unset flag does not override",
			args: []string{"-config", path},
			env:  map[string]string{EnvLogLevel: "error"},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:1001"
				c.LogLevel = "error"
				c.LogFormat = "console"
				c.AllowedOrigins = []string{"https://yaml.example"}
			},
		},
		{
			name: "config flag beats MCP_CONFIG",
			args: []string{"-config", path},
			env:  map[string]string{EnvConfig: filepath.Join(t.TempDir(), "absent.yaml")},
			want: func(c *Config) {
				c.Listen = "127.0.0.1:1001"
				c.LogLevel = "warn"
				c.LogFormat = "console"
				c.AllowedOrigins = []string{"https://yaml.example"}
			},
		},
		{
			name: "empty config flag turns MCP_CONFIG off",
			args: []string{"-config="},
			env:  map[string]string{EnvConfig: path},
			want: func(*Config) {},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := load(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load() = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadAllowedOriginsEnv(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"https://a.example", []string{"https://a.example"}},
		{" https://a.example , http://b.example:8080/ ", []string{"https://a.example", "http://b.example:8080"}},
		{"https://a.example,,  ,https://c.example,", []string{"https://a.example", "https://c.example"}},
		{"HTTPS://Upper.Example/", []string{"https://upper.example"}},
		{" * ", []string{"*"}},
		{" , ", []string{}}, // set, but no items: localhost only, overriding YAML
	}
	path := writeConfig(t, "allowedOrigins: [\"https://yaml.example\"]\n")
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := load([]string{"-config", path}, map[string]string{EnvAllowedOrigins: tc.in})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.AllowedOrigins, tc.want) {
				t.Errorf("AllowedOrigins = %q, want %q", got.AllowedOrigins, tc.want)
			}
		})
	}

	_, err := load(nil, map[string]string{EnvAllowedOrigins: "https://ok.example, https://bad.example/path"})
	if err == nil || !strings.Contains(err.Error(), "allowedOrigins[1]") || !strings.Contains(err.Error(), "https://bad.example/path") {
		t.Errorf("Load with a bad origin = %v, want an error naming allowedOrigins[1] and the value", err)
	}
}

// Bad values reach the caller as *FieldError with their key, whatever the
// layer that set them.
func TestLoadInvalidValueNamesKey(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		args  []string
		env   map[string]string
		key   string
		value string
	}{
		{name: "yaml duration", yaml: "transport:\n  keepAliveIntervalMs: 5\n", key: "transport.keepAliveIntervalMs", value: "5"},
		{name: "yaml separator", yaml: "toolNameSeparator: \".\"\n", key: "toolNameSeparator", value: `"."`},
		{name: "yaml shutdown", yaml: "shutdownGraceMs: -5\n", key: "shutdownGraceMs", value: "-5"},
		{name: "env listen", env: map[string]string{EnvAddr: "localhost"}, key: "listen", value: `"localhost"`},
		{name: "env log format", env: map[string]string{EnvLogFormat: "xml"}, key: "logFormat", value: `"xml"`},
		{name: "flag log level", args: []string{"-log-level", "chatty"}, key: "logLevel", value: `"chatty"`},
		{name: "flag empty addr", args: []string{"-addr="}, key: "listen", value: `""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append([]string{"-config", writeConfig(t, tc.yaml)}, args...)
			}
			_, err := load(args, tc.env)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != tc.key {
				t.Fatalf("Load() = %v, want a *FieldError for %s", err, tc.key)
			}
			if !strings.Contains(err.Error(), tc.key+": invalid value "+tc.value) {
				t.Errorf("Load() = %q, want it to name %s and %s", err, tc.key, tc.value)
			}
		})
	}
}

func TestLoadYAMLErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error, besides the path
	}{
		{"unknown top-level key", "listen: \":1\"\nlistne: \":2\"\n", []string{"line 2: listne:", "field listne not found"}},
		{"unknown nested key", "transport:\n  pagesize: 5\n", []string{"line 2: transport.pagesize:"}},
		{"unknown key in flow map", "transport: {pageSize: 5, bogus: 1}\n", []string{"line 1: transport:", "bogus"}},
		{"wrong type", "transport:\n  pageSize: lots\n", []string{"line 2: transport.pageSize:", "lots"}},
		{"wrong type in list", "allowedOrigins:\n  - https://a.example\n  - {x: 1}\n", []string{"line 3: allowedOrigins[1]: cannot unmarshal !!map"}},
		{"mapping for a scalar", "listen:\n  host: x\n", []string{"line 2: listen: cannot unmarshal !!map"}},
		{"scalar for a mapping", "transport: 5\n", []string{"line 1: transport: cannot unmarshal !!int"}},
		{"overflow", "transport:\n  eventLogSize: 99999999999999999999\n", []string{"transport.eventLogSize"}},
		{"duplicate key", "logLevel: info\nlogLevel: debug\n", []string{"line 2: logLevel:"}},
		{"not a mapping", "- a\n- b\n", []string{"cannot unmarshal"}},
		{"malformed", "listen: [unclosed\n", []string{"yaml:"}},
		{"tab indent", "transport:\n\tpageSize: 5\n", []string{"yaml:"}},
		{"two documents", "logLevel: info\n---\nlogLevel: debug\n", []string{"second YAML document"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			_, err := load([]string{"-config", path}, nil)
			if err == nil {
				t.Fatal("Load() = nil error, want one")
			}
			msg := err.Error()
			if !strings.Contains(msg, "parse config "+path+": ") {
				t.Errorf("Load() = %q, want it to name the file %s", msg, path)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Load() = %q, want it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-config", path}, nil},
		{"env", nil, map[string]string{EnvConfig: path}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.args, tc.env)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Load() = %v, want fs.ErrNotExist", err)
			}
			if err == nil || !strings.Contains(err.Error(), "read config "+path) {
				t.Errorf("Load() = %v, want it to name %s", err, path)
			}
		})
	}
}

func TestLoadFileTooLarge(t *testing.T) {
	path := writeConfig(t, "# "+strings.Repeat("x", maxFileBytes)+"\n")
	_, err := load([]string{"-config", path}, nil)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load() = %v, want a size error naming %s", err, path)
	}
}

func TestLoadFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		help     bool
		wantText string // in the error or the usage output
	}{
		{"-h", []string{"-h"}, true, "Usage: mcp-runtime"},
		{"-help", []string{"-help"}, true, "Usage: mcp-runtime"},
		{"--help", []string{"--help"}, true, EnvAllowedOrigins},
		{"unknown flag", []string{"-port", "1"}, false, "flag provided but not defined: -port"},
		{"missing value", []string{"-addr"}, false, "flag needs an argument"},
		{"positional", []string{"serve"}, false, `unexpected argument "serve"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := LoadWithOutput(tc.args, env(nil), &out)
			if err == nil {
				t.Fatal("LoadWithOutput() = nil error, want one")
			}
			if got := errors.Is(err, flag.ErrHelp); got != tc.help {
				t.Errorf("errors.Is(%v, flag.ErrHelp) = %v, want %v", err, got, tc.help)
			}
			if !strings.Contains(err.Error()+out.String(), tc.wantText) {
				t.Errorf("error %q and output %q, want %q in one of them", err, out.String(), tc.wantText)
			}
		})
	}
}

// The returned AllowedOrigins must not alias the YAML decoder's slice or any
// earlier result.
func TestLoadResultIsIndependent(t *testing.T) {
	path := writeConfig(t, fullYAML)
	a, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.AllowedOrigins[0] = "changed"
	if b.AllowedOrigins[0] == "changed" {
		t.Error("two Load results share AllowedOrigins")
	}
}
