package response_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// envelope is a decoded envelope; pointers tell absent from zero.
type envelope struct {
	Success  *bool           `json:"success"`
	Data     json.RawMessage `json:"data"`
	Error    json.RawMessage `json:"error"`
	Metadata *struct {
		DurationMs *int64 `json:"durationMs"`
		Cached     *bool  `json:"cached"`
		Truncated  *bool  `json:"truncated"`
	} `json:"metadata"`
}

type structuredError struct {
	Code         string         `json:"code"`
	Message      *string        `json:"message"`
	Context      map[string]any `json:"context"`
	Retryable    *bool          `json:"retryable"`
	RetryAfterMs *int64         `json:"retryAfterMs"`
}

func (e envelope) truncated() bool { return *e.Metadata.Truncated }

func (e envelope) err(t tb) structuredError {
	t.Helper()
	var se structuredError
	if err := json.Unmarshal(e.Error, &se); err != nil {
		t.Fatalf("error member: %v in %s", err, e.Error)
	}
	return se
}

// compileEnvelopeSchema compiles EnvelopeSchema() as MCP clients do (2020-12).
func compileEnvelopeSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(response.EnvelopeSchema()))
	if err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mcp:///envelope", doc); err != nil {
		t.Fatalf("load schema: %v", err)
	}
	s, err := c.Compile("mcp:///envelope")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

// validateJSON validates raw JSON against s.
func validateJSON(s *jsonschema.Schema, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// checkResult holds r to everything every result must satisfy and returns
// its envelope and encoded size: one text block holding exactly the
// structuredContent, valid JSON on the wire whose text and
// structuredContent decode alike, the schema, isError iff failure, and a
// size computed exactly. s may be nil to skip the schema.
func checkResult(t tb, s *jsonschema.Schema, r *protocol.CallToolResult) (envelope, int) {
	t.Helper()
	if r == nil {
		t.Fatal("nil result")
	}
	if len(r.Content) != 1 || r.Content[0].Type != protocol.ContentText {
		t.Fatalf("content = %+v, want one text block", r.Content)
	}
	if r.Content[0].Text != string(r.StructuredContent) {
		t.Fatalf("text block %q differs from structuredContent %q", r.Content[0].Text, r.StructuredContent)
	}
	// The result promises compact, valid JSON (StructuredCompact), which
	// the encoder copies unchecked: hold every result to it.
	if !r.StructuredCompact {
		t.Fatal("StructuredCompact is false")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, r.StructuredContent); err != nil || !bytes.Equal(compact.Bytes(), r.StructuredContent) {
		t.Fatalf("structuredContent %q is not compact, valid JSON (%v)", r.StructuredContent, err)
	}
	wire, err := protocol.AppendToolResult(nil, r)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !json.Valid(wire) {
		t.Fatalf("wire form is not valid JSON: %q", wire)
	}
	if got := response.WireSize(r.StructuredContent, r.IsError); got != len(wire) {
		t.Fatalf("computed size %d, encoded size %d", got, len(wire))
	}
	// What a client sees: the decoded text and structuredContent agree.
	var onWire struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(wire, &onWire); err != nil {
		t.Fatalf("decode wire form: %v", err)
	}
	if onWire.Content[0].Text != string(onWire.StructuredContent) {
		t.Fatalf("on the wire, text %q and structuredContent %q differ", onWire.Content[0].Text, onWire.StructuredContent)
	}
	var env envelope
	if err := json.Unmarshal(r.StructuredContent, &env); err != nil {
		t.Fatalf("envelope: %v in %s", err, r.StructuredContent)
	}
	if env.Success == nil || env.Metadata == nil || env.Metadata.DurationMs == nil || env.Metadata.Truncated == nil || env.Metadata.Cached == nil {
		t.Fatalf("envelope lacks success or metadata members: %s", r.StructuredContent)
	}
	if r.IsError != !*env.Success || onWire.IsError != r.IsError {
		t.Fatalf("isError %v with success %v", r.IsError, *env.Success)
	}
	if s != nil {
		if err := validateJSON(s, r.StructuredContent); err != nil {
			t.Fatalf("envelope does not match EnvelopeSchema: %v\n%s", err, r.StructuredContent)
		}
	}
	return env, len(wire)
}

// unlimited caps nothing a test produces.
func unlimited(suffix string) response.Limits {
	return response.Limits{MaxResponseBytes: 1 << 30, MaxListItems: 1 << 30, MaxStringLength: 1 << 30, TruncationSuffix: suffix}
}

// alphabet mixes ASCII, characters JSON must escape, HTML characters,
// multi-byte UTF-8, the JavaScript line separators and U+FFFD.
var alphabet = []rune{
	'a', 'b', 'Z', '0', ' ', '"', '\\', '/', '<', '>', '&', '\n', '\t', '\x00', '\x1f', '\x7f',
	'é', '€', '中', '😀', '\u2028', '\u2029', '\uFFFD',
}

var suffixes = []string{"... [truncated]", "…", "", `"\<cut>`, "✂️"}

// genString draws a string, sometimes long (a repeated pattern), sometimes
// with invalid UTF-8 (which json.Marshal replaces).
func genString(t *rapid.T, label string) string {
	s := rapid.StringOfN(rapid.SampledFrom(alphabet), 0, 12, -1).Draw(t, label)
	if rapid.IntRange(0, 4).Draw(t, label+"-long") == 0 {
		s = strings.Repeat(s, rapid.IntRange(1, 400).Draw(t, label+"-repeat"))
	}
	if rapid.IntRange(0, 20).Draw(t, label+"-invalid") == 0 {
		s += "\xff"
	}
	return s
}

// genValue draws a JSON-shaped Go value: nested maps and lists of scalars
// and strings, some lists long.
func genValue(t *rapid.T, depth int) any {
	kinds := 6
	if depth <= 0 {
		kinds = 3
	}
	switch rapid.IntRange(0, kinds).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		if rapid.Bool().Draw(t, "int") {
			return rapid.Int64().Draw(t, "i")
		}
		return rapid.Float64Range(-1e6, 1e6).Draw(t, "f")
	case 3:
		return genString(t, "s")
	case 4:
		n := rapid.IntRange(0, 30).Draw(t, "len")
		list := make([]any, n)
		for i := range list {
			list[i] = genValue(t, depth-1)
		}
		return list
	case 5:
		n := rapid.IntRange(0, 6).Draw(t, "members")
		m := make(map[string]any, n)
		for range n {
			m[genString(t, "key")] = genValue(t, depth-1)
		}
		return m
	default: // a long list of one repeated value
		n := rapid.IntRange(0, 500).Draw(t, "wide")
		v := genValue(t, 0)
		list := make([]any, n)
		for i := range list {
			list[i] = v
		}
		return list
	}
}

// genLimits draws valid limits, mostly small enough to cut.
func genLimits(t *rapid.T) response.Limits {
	l := response.Limits{
		MaxResponseBytes: rapid.IntRange(1024, 64<<10).Draw(t, "maxResponseBytes"),
		MaxListItems:     rapid.IntRange(1, 40).Draw(t, "maxListItems"),
		TruncationSuffix: rapid.SampledFrom(suffixes).Draw(t, "suffix"),
	}
	l.MaxStringLength = len([]rune(l.TruncationSuffix)) + rapid.IntRange(1, 600).Draw(t, "maxStringLength")
	if err := l.Validate(); err != nil {
		t.Fatalf("generated invalid limits: %v", err)
	}
	return l
}

func genMeta(t *rapid.T) response.Metadata {
	return response.Metadata{
		DurationMs: rapid.OneOf(rapid.Int64Range(0, 100_000), rapid.Int64(), rapid.Just(int64(1<<63-1))).Draw(t, "durationMs"),
		Cached:     rapid.Bool().Draw(t, "cached"),
	}
}

// genError draws a failure: any code (an invalid one too), a message of any
// length, maybe a context and a retry delay.
func genError(t *rapid.T) *response.Error {
	codes := append(response.Codes(), "", "NOPE")
	e := &response.Error{
		Code:    rapid.SampledFrom(codes).Draw(t, "code"),
		Message: genString(t, "message"),
	}
	if rapid.Bool().Draw(t, "hasContext") {
		n := rapid.IntRange(1, 4).Draw(t, "contextMembers")
		for range n {
			e.WithContext(genString(t, "contextKey"), genValue(t, 2))
		}
	}
	if rapid.Bool().Draw(t, "hasRetryAfter") {
		e.RetryAfterMs = rapid.Int64Range(1, 1<<40).Draw(t, "retryAfterMs")
	}
	return e
}
