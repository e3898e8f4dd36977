// Package limits checks the arguments of a tool call against the request
// limits before the tool's handler runs (DESIGN.md, request path step 3).
//
// The limits are those of MCPRequestLimitsSchema in docs/spec/optimization-prd.md,
// Feature 4: the size of an array, the length of a string, the nesting depth
// of objects and arrays, and the size of the raw arguments in bytes.
//
//   - INV-MCP-LIMIT-001 (array size): every array in the arguments, however
//     deeply nested, is counted; one larger than the tool's limit is an
//     ARRAY_TOO_LARGE violation.
//   - INV-MCP-LIMIT-002 (early rejection): [Checker.Check] only reads the raw
//     JSON, so the caller can reject the call before decoding the arguments
//     or running the handler; the call path wires it in (internal/pipeline).
//   - INV-MCP-LIMIT-003 (tool-specific limits): a tool's entry in
//     toolArrayLimits beats maxArraySize; see [Checker.ArrayLimit].
//   - INV-MCP-LIMIT-004 (descriptive errors): each [Violation] carries the
//     JSON Pointer of the offending value, a code, the limit and the actual
//     value, and Check reports all of them, not just the first.
//
// # The walk
//
// Check makes one pass over the bytes of the arguments without decoding them
// into Go values. It keeps a stack with one small frame per open object or
// array: the element count of an array, or the byte range of the member name
// being read in an object. A JSON Pointer is formatted from that stack only
// when a violation is reported, so a call within its limits costs no
// allocation at all. Strings are measured in characters of the decoded
// string (runes: "\u00e9" and "é" both count 1); a string whose raw bytes fit
// the limit cannot decode to more runes than that, so only longer ones are
// decoded to be counted.
//
// Member names are strings too and obey maxStringLength; a name that is too
// long is reported at the path of the object that holds it, because a path
// ending in the offending name would repeat it in full.
//
// Depth counts objects and arrays alike, and the arguments object itself is
// at depth 1. The first container nested deeper than maxObjectDepth is one
// MAX_DEPTH_EXCEEDED violation, whose actual value is the deepest level
// reached inside it; its contents are skipped unchecked (they are rejected
// with it) and the walk goes on with its siblings. This also bounds the
// walker's stack by maxObjectDepth.
//
// Violations come in document order of the values they are about: an array
// that is too large comes before any violation inside it.
package limits

import (
	"errors"
	"fmt"
	"sort"
)

// Violation codes.
const (
	CodeArrayTooLarge    = "ARRAY_TOO_LARGE"
	CodeStringTooLong    = "STRING_TOO_LONG"
	CodeMaxDepthExceeded = "MAX_DEPTH_EXCEEDED"
	CodeRequestTooLarge  = "REQUEST_TOO_LARGE"
)

// Violation is one value over a limit: an error of ValidationResultSchema
// (docs/spec/optimization-prd.md, Feature 4) with all its fields set
// (INV-MCP-LIMIT-004).
type Violation struct {
	// Path is the RFC 6901 JSON Pointer of the value in the arguments, e.g.
	// "/items/3/tags"; "" is the arguments as a whole.
	Path string `json:"path"`
	// Code is one of the Code constants.
	Code string `json:"code"`
	// Message says what is wrong, in words, with the numbers.
	Message string `json:"message"`
	// Limit is the configured limit and Actual the value found; Actual is
	// always greater than Limit.
	Limit  int64 `json:"limit"`
	Actual int64 `json:"actual"`
}

// Config is MCPRequestLimitsSchema (docs/spec/optimization-prd.md, Feature 4). Every
// value must be positive; [DefaultConfig] returns the PRD's defaults.
type Config struct {
	// MaxArraySize is the largest number of elements in any array, for a
	// tool without an entry in ToolArrayLimits. Default 100.
	MaxArraySize int
	// MaxStringLength is the largest number of characters (runes of the
	// decoded string) in any string, member names included. Default 100000.
	MaxStringLength int
	// MaxObjectDepth is the deepest nesting of objects and arrays; the
	// arguments object itself is at depth 1. Default 10.
	MaxObjectDepth int
	// MaxRequestBytes is the largest size of the raw arguments JSON.
	// Default 10 MiB.
	MaxRequestBytes int64
	// ToolArrayLimits replaces MaxArraySize for the tools it names, by
	// canonical (memory.bulk_delete) or exposed (memory_bulk_delete) name
	// (INV-MCP-LIMIT-003).
	ToolArrayLimits map[string]int
}

// DefaultConfig returns the PRD's defaults. Each call returns a new
// ToolArrayLimits map, so callers may change it freely.
func DefaultConfig() Config {
	return Config{
		MaxArraySize:    100,
		MaxStringLength: 100_000,
		MaxObjectDepth:  10,
		MaxRequestBytes: 10 << 20,
		ToolArrayLimits: map[string]int{
			"bugfix_scan":        100,
			"refactor_scan":      100,
			"memory_bulk_delete": 1000,
			"ability_inject":     20,
		},
	}
}

// Validate reports every value that is not positive, and every empty tool
// name, naming each as the configuration file does
// (limits.maxArraySize, limits.toolArrayLimits.memory_bulk_delete). The
// result is nil or an errors.Join of one error per problem.
func (c Config) Validate() error {
	var errs []error
	positive := func(key string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %d", key, v))
		}
	}
	positive("limits.maxArraySize", int64(c.MaxArraySize))
	positive("limits.maxStringLength", int64(c.MaxStringLength))
	positive("limits.maxObjectDepth", int64(c.MaxObjectDepth))
	positive("limits.maxRequestBytes", c.MaxRequestBytes)
	for _, name := range sortedKeys(c.ToolArrayLimits) {
		if name == "" {
			errs = append(errs, errors.New("limits.toolArrayLimits: a tool name is empty"))
			continue
		}
		positive("limits.toolArrayLimits."+name, int64(c.ToolArrayLimits[name]))
	}
	return errors.Join(errs...)
}

// An Option adjusts a [Checker] made by [New].
type Option func(*options)

type options struct {
	sep string
}

// WithSeparator sets the separator of exposed tool names (config key
// toolNameSeparator): 1 to 3 characters from [A-Za-z0-9_-]. The default is
// "_".
func WithSeparator(sep string) Option {
	return func(o *options) { o.sep = sep }
}

// Checker applies one [Config] to tool-call arguments. It is immutable, so
// safe for concurrent use.
type Checker struct {
	maxArray  int
	maxString int
	maxDepth  int
	maxBytes  int64
	sep       string
	// tools maps a tool's exposed form (each '.' of the configured key
	// replaced by sep) to its array limit.
	tools map[string]int
}

// New validates c and compiles it into a Checker. Two ToolArrayLimits keys
// that name the same tool (memory.bulk_delete and memory_bulk_delete) must
// agree on the limit.
func New(c Config, opts ...Option) (*Checker, error) {
	o := options{sep: "_"}
	for _, opt := range opts {
		opt(&o)
	}
	if !validSeparator(o.sep) {
		return nil, fmt.Errorf("limits: tool name separator %q: want 1 to 3 characters from [A-Za-z0-9_-]", o.sep)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	k := &Checker{
		maxArray:  c.MaxArraySize,
		maxString: c.MaxStringLength,
		maxDepth:  c.MaxObjectDepth,
		maxBytes:  c.MaxRequestBytes,
		sep:       o.sep,
		tools:     make(map[string]int, len(c.ToolArrayLimits)),
	}
	from := make(map[string]string, len(c.ToolArrayLimits)) // exposed form -> key it came from
	for _, name := range sortedKeys(c.ToolArrayLimits) {
		limit := c.ToolArrayLimits[name]
		exposed := string(appendExposed(nil, name, o.sep))
		if prev, ok := from[exposed]; ok && k.tools[exposed] != limit {
			return nil, fmt.Errorf("limits.toolArrayLimits: %q (%d) and %q (%d) name the same tool with different limits",
				prev, k.tools[exposed], name, limit)
		}
		from[exposed] = name
		k.tools[exposed] = limit
	}
	return k, nil
}

// ArrayLimit returns the array limit for a tool: its ToolArrayLimits entry
// if it has one, else MaxArraySize (INV-MCP-LIMIT-003).
//
// tool is the canonical name (memory.bulk_delete) or the exposed one
// (memory_bulk_delete). A key matches a tool when it equals the canonical
// name, or the canonical name with every '.' replaced by the separator. Both
// the keys and tool are compared in that exposed form, which is what makes
// the exposed name match too. Exposed names longer than 64 characters are
// shortened with a hash by the tool registry; pass such a tool's canonical
// name.
//
// ArrayLimit does not allocate for names up to 128 bytes.
func (k *Checker) ArrayLimit(tool string) int {
	if len(k.tools) == 0 {
		return k.maxArray
	}
	var buf [128]byte
	if n, ok := k.tools[string(appendExposed(buf[:0], tool, k.sep))]; ok {
		return n
	}
	return k.maxArray
}

// appendExposed appends name to b with every '.' replaced by sep.
func appendExposed(b []byte, name, sep string) []byte {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			b = append(b, sep...)
		} else {
			b = append(b, name[i])
		}
	}
	return b
}

// validSeparator reports whether sep is 1 to 3 characters of [A-Za-z0-9_-],
// the rule of the toolNameSeparator configuration key.
func validSeparator(sep string) bool {
	if len(sep) == 0 || len(sep) > 3 {
		return false
	}
	for i := 0; i < len(sep); i++ {
		c := sep[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
