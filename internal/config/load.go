package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Environment variables read by Load. An empty value counts as unset,
// because getenv cannot tell the two apart.
const (
	EnvConfig         = "MCP_CONFIG"          // path of the YAML file
	EnvAddr           = "MCP_ADDR"            // listen
	EnvAllowedOrigins = "MCP_ALLOWED_ORIGINS" // allowedOrigins, comma-separated
	EnvLogLevel       = "MCP_LOG_LEVEL"       // logLevel
	EnvLogFormat      = "MCP_LOG_FORMAT"      // logFormat
)

// Environment returns the names of every environment variable Load reads,
// for the usage text.
func Environment() []string {
	return []string{EnvConfig, EnvAddr, EnvAllowedOrigins, EnvLogLevel, EnvLogFormat,
		EnvDatabaseURL, EnvRedisURL, EnvRedisMode, EnvTLSCertFile, EnvTLSKeyFile, EnvAuthMode, EnvAdminToken,
		EnvRequestStateKey, EnvRequestStatePreviousKeys}
}

// Flag names, without the leading "-".
const (
	flagConfig   = "config"
	flagAddr     = "addr"
	flagLogLevel = "log-level"
)

// Load builds the configuration. args are the command-line arguments without
// the program name; getenv looks up environment variables (os.Getenv in
// production, a map in tests; nil means an empty environment). Usage and flag
// errors are printed to standard error.
//
// For -h or -help the error wraps flag.ErrHelp: the caller should exit 0,
// the usage text has already been printed.
func Load(args []string, getenv func(string) string) (Config, error) {
	return LoadWithOutput(args, getenv, os.Stderr)
}

// LoadWithOutput is Load with usage and flag errors printed to w.
func LoadWithOutput(args []string, getenv func(string) string, w io.Writer) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	def := Default()

	// A fresh FlagSet per call, not flag.CommandLine: Load has no global
	// state, so tests can call it concurrently.
	fs := flag.NewFlagSet("mcp-runtime", flag.ContinueOnError)
	fs.SetOutput(w)
	configPath := fs.String(flagConfig, "", "`path` of the YAML configuration file (env "+EnvConfig+")")
	addr := fs.String(flagAddr, def.Listen, "listen `address` host:port (env "+EnvAddr+", YAML listen)")
	logLevel := fs.String(flagLogLevel, def.LogLevel, "log `level`: trace, debug, info, warn or error (env "+EnvLogLevel+", YAML logLevel)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcp-runtime [flags]\n\n"+
			"Configuration precedence: defaults < YAML file < environment < flags.\n"+
			"Environment: %s.\n\nFlags:\n", strings.Join(Environment(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("parse flags: unexpected argument %q: mcp-runtime takes flags only", fs.Arg(0))
	}
	// Only flags given on the command line override: a flag's default must
	// not undo a value from the file or the environment.
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := def
	path := getenv(EnvConfig)
	if set[flagConfig] {
		path = *configPath // even "": -config= turns MCP_CONFIG off
	}
	if path != "" {
		if err := decodeFile(path, &cfg); err != nil {
			return Config{}, err
		}
	}

	applyEnv(&cfg, getenv)

	if set[flagAddr] {
		cfg.Listen = *addr
	}
	if set[flagLogLevel] {
		cfg.LogLevel = *logLevel
	}

	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid configuration: %w", err)
	}
	// Copy as well as normalize, so the result shares no backing array
	// with anything the YAML decoder or a caller holds.
	origins := make([]string, len(cfg.AllowedOrigins))
	for i, o := range cfg.AllowedOrigins {
		origins[i] = normalizeOrigin(o)
	}
	cfg.AllowedOrigins = origins
	return cfg, nil
}

// applyEnv overrides cfg with the environment variables that are set.
func applyEnv(cfg *Config, getenv func(string) string) {
	if v := getenv(EnvAddr); v != "" {
		cfg.Listen = v
	}
	if v := getenv(EnvAllowedOrigins); v != "" {
		cfg.AllowedOrigins = splitList(v)
	}
	if v := getenv(EnvLogLevel); v != "" {
		cfg.LogLevel = v
	}
	if v := getenv(EnvLogFormat); v != "" {
		cfg.LogFormat = v
	}
	if v := getenv(EnvDatabaseURL); v != "" {
		cfg.DatabaseURL = v
	}
	if v := getenv(EnvRedisURL); v != "" {
		cfg.RedisURL = v
	}
	if v := getenv(EnvRedisMode); v != "" {
		cfg.Redis.Mode = v
	}
	if v := getenv(EnvTLSCertFile); v != "" {
		cfg.TLS.CertFile = v
	}
	if v := getenv(EnvTLSKeyFile); v != "" {
		cfg.TLS.KeyFile = v
	}
	if v := getenv(EnvAuthMode); v != "" {
		cfg.Auth.Mode = v
	}
	if v := getenv(EnvAdminToken); v != "" {
		cfg.Admin.Token = v
	}
	if v := getenv(EnvRequestStateKey); v != "" {
		cfg.RequestState.Key = v
	}
	if v := getenv(EnvRequestStatePreviousKeys); v != "" {
		cfg.RequestState.PreviousKeys = splitList(v)
	}
}

// splitList splits a comma-separated list, trimming spaces and dropping empty
// items, so "a, b," (easy to write in a Helm values file) means [a b].
func splitList(s string) []string {
	items := []string{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
