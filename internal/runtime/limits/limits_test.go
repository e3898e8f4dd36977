package limits

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func mustNew(t testing.TB, c Config, opts ...Option) *Checker {
	t.Helper()
	k, err := New(c, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return k
}

// array returns a JSON array of n small numbers.
func array(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i % 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// checkEqual runs Check and compares everything but the messages; it also
// checks the reference implementation agrees with the expectation.
func checkEqual(t *testing.T, k *Checker, c Config, tool, doc string, want []refViolation) {
	t.Helper()
	got := strip(k.Check(tool, []byte(doc)))
	if len(want) == 0 {
		want = []refViolation{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Check(%s, %.80q):\n got  %v\n want %v", tool, doc, got, want)
	}
	if !json.Valid([]byte(doc)) {
		t.Fatalf("test document is not valid JSON: %.80q", doc)
	}
	ref, err := refCheck(c, k.ArrayLimit(tool), []byte(doc))
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	if len(ref) == 0 {
		ref = []refViolation{}
	}
	if !reflect.DeepEqual(ref, want) {
		t.Errorf("reference(%s, %.80q):\n got  %v\n want %v", tool, doc, ref, want)
	}
}

func TestINV_MCP_LIMIT_001_ArraySizeEnforcement(t *testing.T) {
	c := DefaultConfig()
	k := mustNew(t, c)
	const tool = "memory.store" // no tool-specific limit: 100
	tests := []struct {
		name string
		doc  string
		want []refViolation
	}{
		{"empty object", `{}`, nil},
		{"empty array", `{"a":[]}`, nil},
		{"at the limit", `{"items":` + array(100) + `}`, nil},
		{"one over the limit", `{"items":` + array(101) + `}`,
			[]refViolation{{"/items", CodeArrayTooLarge, 100, 101}}},
		{"top level", array(250), []refViolation{{"", CodeArrayTooLarge, 100, 250}}},
		{"nested in objects", `{"a":{"b":{"c":` + array(150) + `}}}`,
			[]refViolation{{"/a/b/c", CodeArrayTooLarge, 100, 150}}},
		{"in an array of arrays", `{"m":[[1],` + array(100) + `,` + array(101) + `]}`,
			[]refViolation{{"/m/2", CodeArrayTooLarge, 100, 101}}},
		{"outer and inner both over, outer first", `{"m":[` + strings.Repeat(array(101)+",", 100) + array(102) + `]}`,
			func() []refViolation {
				v := []refViolation{{"/m", CodeArrayTooLarge, 100, 101}}
				for i := 0; i < 100; i++ {
					v = append(v, refViolation{fmt.Sprintf("/m/%d", i), CodeArrayTooLarge, 100, 101})
				}
				return append(v, refViolation{"/m/100", CodeArrayTooLarge, 100, 102})
			}()},
		{"array of objects", `{"items":[` + strings.Repeat(`{"tags":["a"]},`, 3) + `{"tags":` + array(120) + `}]}`,
			[]refViolation{{"/items/3/tags", CodeArrayTooLarge, 100, 120}}},
		{"elements that are strings with commas and brackets",
			`{"s":[` + strings.Repeat(`"a,]b\",[",`, 100) + `"x"]}`,
			[]refViolation{{"/s", CodeArrayTooLarge, 100, 101}}},
		{"whitespace everywhere", " {\n\t\"a\" :\r [ " + strings.Repeat(" 1 ,\n", 100) + " 1 ] } ",
			[]refViolation{{"/a", CodeArrayTooLarge, 100, 101}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEqual(t, k, c, tool, tt.doc, tt.want)
		})
	}
}

func TestINV_MCP_LIMIT_003_ToolSpecificLimits(t *testing.T) {
	def := mustNew(t, DefaultConfig())
	dashCfg := DefaultConfig()
	dashCfg.ToolArrayLimits = map[string]int{"memory-bulk_delete": 1000, "agent.spawn": 5}
	dash := mustNew(t, dashCfg, WithSeparator("-"))
	tests := []struct {
		name string
		k    *Checker
		tool string
		want int
	}{
		{"canonical name", def, "memory.bulk_delete", 1000},
		{"exposed name", def, "memory_bulk_delete", 1000},
		{"another tool canonical", def, "memory.store", 100},
		{"another tool exposed", def, "memory_store", 100},
		{"tool with a smaller limit", def, "ability.inject", 20},
		{"prefix does not match", def, "memory.bulk_delete_all", 100},
		{"other separator does not match", def, "memory-bulk_delete", 100},
		{"empty name", def, "", 100},
		{"dash: canonical name", dash, "memory.bulk_delete", 1000},
		{"dash: exposed name", dash, "memory-bulk_delete", 1000},
		{"dash: underscore form is another tool", dash, "memory_bulk_delete", 100},
		{"dash: canonical key, canonical name", dash, "agent.spawn", 5},
		{"dash: canonical key, exposed name", dash, "agent-spawn", 5},
		{"dash: unlisted tool", dash, "memory.store", 100},
		{"long name", def, strings.Repeat("x.", 100) + "y", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.k.ArrayLimit(tt.tool); got != tt.want {
				t.Errorf("ArrayLimit(%q) = %d, want %d", tt.tool, got, tt.want)
			}
		})
	}

	// Check applies the tool's limit, not the global one, in both directions.
	c := DefaultConfig()
	checks := []struct {
		tool string
		doc  string
		want []refViolation
	}{
		{"memory.bulk_delete", `{"keys":` + array(1000) + `}`, nil},
		{"memory_bulk_delete", `{"keys":` + array(1000) + `}`, nil},
		{"memory.bulk_delete", `{"keys":` + array(1001) + `}`, []refViolation{{"/keys", CodeArrayTooLarge, 1000, 1001}}},
		{"memory.store", `{"keys":` + array(1000) + `}`, []refViolation{{"/keys", CodeArrayTooLarge, 100, 1000}}},
		{"ability.inject", `{"abilities":` + array(21) + `}`, []refViolation{{"/abilities", CodeArrayTooLarge, 20, 21}}},
		{"ability_inject", `{"abilities":` + array(20) + `}`, nil},
	}
	for _, tt := range checks {
		t.Run("check "+tt.tool, func(t *testing.T) {
			checkEqual(t, def, c, tt.tool, tt.doc, tt.want)
		})
	}
}

func TestINV_MCP_LIMIT_004_DescriptiveErrors(t *testing.T) {
	c := Config{MaxArraySize: 2, MaxStringLength: 5, MaxObjectDepth: 3, MaxRequestBytes: 1000}
	k := mustNew(t, c)
	doc := `{"list":[1,2,3],"name":"abcdefgh","deep":{"a":{"b":{}}},"ok":"abc"}`
	vs := k.Check("t", []byte(doc))
	codes := map[string]bool{}
	for _, v := range vs {
		codes[v.Code] = true
		if v.Path == "" || v.Path[0] != '/' {
			t.Errorf("%+v: path should point into the arguments", v)
		}
		if v.Code == "" || v.Message == "" {
			t.Errorf("%+v: empty code or message", v)
		}
		if v.Limit <= 0 || v.Actual <= v.Limit {
			t.Errorf("%+v: want 0 < limit < actual", v)
		}
		if !strings.Contains(v.Message, fmt.Sprint(v.Actual)) || !strings.Contains(v.Message, fmt.Sprint(v.Limit)) {
			t.Errorf("%+v: the message should state the actual value and the limit", v)
		}
		// ValidationResultSchema: every field present on the wire.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"path", "code", "message", "limit", "actual"} {
			if _, ok := m[f]; !ok {
				t.Errorf("%s: no %q field", b, f)
			}
		}
	}
	for _, code := range []string{CodeArrayTooLarge, CodeStringTooLong, CodeMaxDepthExceeded} {
		if !codes[code] {
			t.Errorf("no %s among %+v", code, vs)
		}
	}

	big := `{"s":"` + strings.Repeat("x", 1000) + `"}`
	vs = k.Check("t", []byte(big))
	if len(vs) != 1 {
		t.Fatalf("oversized request: got %+v, want one violation", vs)
	}
	v := vs[0]
	if v.Path != "" || v.Code != CodeRequestTooLarge || v.Message == "" || v.Limit != 1000 || v.Actual != int64(len(big)) {
		t.Errorf("oversized request: got %+v", v)
	}
}

func TestRequestBytes(t *testing.T) {
	c := Config{MaxArraySize: 1, MaxStringLength: 1, MaxObjectDepth: 1, MaxRequestBytes: 20}
	k := mustNew(t, c)
	checkEqual(t, k, c, "t", `{"a":1,"bbbbbbbbbb":2}`, // 22 bytes; the walk is skipped
		[]refViolation{{"", CodeRequestTooLarge, 20, 22}})
	checkEqual(t, k, c, "t", `{"a":1,"bbbbbbbb":2}`, // exactly 20 bytes, walked
		[]refViolation{{"", CodeStringTooLong, 1, 8}})
}

func TestPathEscaping(t *testing.T) {
	c := Config{MaxArraySize: 1, MaxStringLength: 3, MaxObjectDepth: 10, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	tests := []struct {
		name, doc, path string
	}{
		{"slash", `{"a/b":"long!"}`, "/a~1b"},
		{"tilde", `{"m~n":"long!"}`, "/m~0n"},
		{"tilde then one", `{"~1":"long!"}`, "/~01"},
		{"escaped slash", `{"a\/b":"long!"}`, "/a~1b"},
		{"escaped tilde", `{"\u007e":"long!"}`, "/~0"},
		{"escaped unicode", `{"\u00e9t\u00e9":"long!"}`, "/été"},
		{"raw unicode", `{"été":"long!"}`, "/été"},
		{"surrogate pair", `{"\ud83d\ude00":"long!"}`, "/😀"},
		{"escaped quote and backslash", `{"q\"\\":"long!"}`, `/q"\`},
		{"empty name", `{"":"long!"}`, "/"},
		{"nested", `{"a":{"b/c":[{"~":"long!"}]}}`, "/a/b~1c/0/~0"},
		{"index", `{"a":["x","y","long!"]}`, "/a/2"},
		{"invalid UTF-8 in name", "{\"a\xffb\":\"long!\"}", "/a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := []refViolation{{tt.path, CodeStringTooLong, 3, 5}}
			if tt.name == "index" {
				want = append([]refViolation{{"/a", CodeArrayTooLarge, 1, 3}}, want...)
			}
			checkEqual(t, k, c, "t", tt.doc, want)
		})
	}
}

func TestStringLengthInRunes(t *testing.T) {
	c := Config{MaxArraySize: 10, MaxStringLength: 4, MaxObjectDepth: 10, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	tests := []struct {
		name string
		str  string // raw JSON string contents
		want int64  // runes, 0 for no violation
	}{
		{"ascii at limit", `abcd`, 0},
		{"ascii over", `abcde`, 5},
		{"raw two-byte runes at limit", `éééé`, 0}, // 8 bytes
		{"raw two-byte runes over", `ééééé`, 5},
		{"escaped runes at limit", `\u00e9\u00e9\u00e9\u00e9`, 0}, // 24 bytes
		{"escaped runes over", `\u00e9\u00e9\u00e9\u00e9\u00e9`, 5},
		{"surrogate pairs count one", `\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00`, 0},
		{"raw emoji count one", `😀😀😀😀😀`, 5},
		{"lone high surrogate", `\ud83dabcd`, 5},
		{"lone low surrogate", `\ude00\ude00\ude00\ude00`, 0},
		{"high then pair", `\ud83d\ud83d\ude00ab`, 0}, // U+FFFD, 😀, a, b: 4 runes
		{"short escapes", `\n\t\"\\\/`, 5},
		{"invalid UTF-8 bytes each count", "a\xff\xfeb", 0},
		{"invalid UTF-8 bytes over", "a\xff\xfe\xfdb", 5},
		{"escaped backslash before quote", `abc\\`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []refViolation
			if tt.want > 4 {
				want = []refViolation{{"/s", CodeStringTooLong, 4, tt.want}}
			}
			checkEqual(t, k, c, "t", `{"s":"`+tt.str+`"}`, want)
		})
	}
	// Member names are strings too; a long one is reported at its object.
	checkEqual(t, k, c, "t", `{"o":{"abcde":1}}`, []refViolation{{"/o", CodeStringTooLong, 4, 5}})
}

func TestDepthLimit(t *testing.T) {
	c := Config{MaxArraySize: 2, MaxStringLength: 3, MaxObjectDepth: 3, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	tests := []struct {
		name string
		doc  string
		want []refViolation
	}{
		{"at the limit", `{"a":{"b":[1]}}`, nil},
		{"scalars do not count", `{"a":{"b":{"c":"abc"}}}`, nil},
		{"one too deep", `{"a":{"b":{"c":{}}}}`, []refViolation{{"/a/b/c", CodeMaxDepthExceeded, 3, 4}}},
		{"arrays count", `[[[[]]]]`, []refViolation{{"/0/0/0", CodeMaxDepthExceeded, 3, 4}}},
		{"reported once with the deepest level", `{"a":[{"b":[[[{"c":1}]]]}]}`,
			[]refViolation{{"/a/0/b", CodeMaxDepthExceeded, 3, 7}}},
		{"contents of the too-deep container are not checked",
			`{"a":{"b":{"c":["abcdef",1,2,3]}}}`, []refViolation{{"/a/b/c", CodeMaxDepthExceeded, 3, 4}}},
		{"siblings are still walked",
			`{"a":{"b":{"c":[],"d":{}},"e":"abcd"},"f":[{"g":{}},1,2]}`,
			[]refViolation{
				{"/a/b/c", CodeMaxDepthExceeded, 3, 4},
				{"/a/b/d", CodeMaxDepthExceeded, 3, 4},
				{"/a/e", CodeStringTooLong, 3, 4},
				{"/f", CodeArrayTooLarge, 2, 3},
				{"/f/0/g", CodeMaxDepthExceeded, 3, 4},
			}},
		{"strings with brackets inside a skipped container",
			`{"a":{"b":{"c":["]]}}",{"x":"[[{{\"]"}],"d":"abcd"}}}`,
			[]refViolation{{"/a/b/c", CodeMaxDepthExceeded, 3, 5}, {"/a/b/d", CodeStringTooLong, 3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEqual(t, k, c, "t", tt.doc, tt.want)
		})
	}
}

// TestDeepConfiguredLimit covers a depth limit beyond the walker's 16
// built-in frames.
func TestDeepConfiguredLimit(t *testing.T) {
	c := Config{MaxArraySize: 1, MaxStringLength: 1, MaxObjectDepth: 40, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	nest := func(n int, inner string) string {
		return strings.Repeat(`{"k":[`, n) + inner + strings.Repeat(`]}`, n)
	}
	path := strings.Repeat("/k/0", 19) // 19 objects and 19 arrays: depth 38
	checkEqual(t, k, c, "t", nest(19, `"ab",2`), []refViolation{
		{path[:len(path)-2], CodeArrayTooLarge, 1, 2},
		{path, CodeStringTooLong, 1, 2},
	})
	checkEqual(t, k, c, "t", nest(25, `1`), []refViolation{
		{strings.Repeat("/k/0", 20), CodeMaxDepthExceeded, 40, 50},
	})
}

func TestManyViolationsInDocumentOrder(t *testing.T) {
	c := Config{MaxArraySize: 2, MaxStringLength: 4, MaxObjectDepth: 4, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	doc := `{
		"s": "abcde",
		"l": [
			"vwxyz",
			[1, 2, 3],
			{"d": {"e": {}}},
			"ok"
		],
		"looong": {"x": [1, 2, 3]},
		"z": [1, 2, 3]
	}`
	checkEqual(t, k, c, "t", doc, []refViolation{
		{"/s", CodeStringTooLong, 4, 5},
		{"/l", CodeArrayTooLarge, 2, 4},
		{"/l/0", CodeStringTooLong, 4, 5},
		{"/l/1", CodeArrayTooLarge, 2, 3},
		{"/l/2/d/e", CodeMaxDepthExceeded, 4, 5},
		{"", CodeStringTooLong, 4, 6}, // the member name "looong", at its object
		{"/looong/x", CodeArrayTooLarge, 2, 3},
		{"/z", CodeArrayTooLarge, 2, 3},
	})
}

func TestScalarsAndLiterals(t *testing.T) {
	c := Config{MaxArraySize: 3, MaxStringLength: 3, MaxObjectDepth: 3, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	checkEqual(t, k, c, "t", `{"n":[-1.5e+10,true,false,null],"m":12345678901234567890}`,
		[]refViolation{{"/n", CodeArrayTooLarge, 3, 4}})
	checkEqual(t, k, c, "t", `"abcd"`, []refViolation{{"", CodeStringTooLong, 3, 4}})
	checkEqual(t, k, c, "t", ` 42 `, nil)
}

func TestCheckDoesNotAllocate(t *testing.T) {
	k := mustNew(t, DefaultConfig())
	for _, doc := range []string{typicalArgs, `{"a":[[[[[[[[[1]]]]]]]]]}`, `{"s":"` + strings.Repeat("é", 1000) + `"}`} {
		args := []byte(doc)
		for _, tool := range []string{"memory.store", "memory.bulk_delete", "memory_bulk_delete"} {
			allocs := testing.AllocsPerRun(100, func() {
				if vs := k.Check(tool, args); vs != nil {
					t.Fatalf("unexpected violations %+v", vs)
				}
			})
			if allocs != 0 {
				t.Errorf("Check(%s, %.40q): %v allocations, want 0", tool, doc, allocs)
			}
		}
	}
}

func TestMalformedInputDoesNotPanic(t *testing.T) {
	c := Config{MaxArraySize: 1, MaxStringLength: 1, MaxObjectDepth: 2, MaxRequestBytes: 1 << 20}
	k := mustNew(t, c)
	for _, doc := range []string{
		``, ` `, `{`, `[`, `}`, `]`, `"`, `"\`, `{"a"`, `{"a":`, `{"a":[`, `{"a":[1,`, `[[[[`, `[[[["`,
		`]]]]`, `{"a" 1}`, `{1:2}`, `[1 2]`, `[,]`, `{,}`, `"abc`, `"\u12`, `"\ud800\u`, `[[[["\"]]]]`,
		`{"a":}`, `{"a":1,}`, `nul`, `[}`, `{]`, `[[[]`, `{"abc":"de"}}}}`, "\x00", `[1,,2]`,
	} {
		k.Check("t", []byte(doc)) // must not panic
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		keys   []string
	}{
		{"zero array size", func(c *Config) { c.MaxArraySize = 0 }, []string{"limits.maxArraySize"}},
		{"negative string length", func(c *Config) { c.MaxStringLength = -1 }, []string{"limits.maxStringLength"}},
		{"zero depth", func(c *Config) { c.MaxObjectDepth = 0 }, []string{"limits.maxObjectDepth"}},
		{"zero bytes", func(c *Config) { c.MaxRequestBytes = 0 }, []string{"limits.maxRequestBytes"}},
		{"tool limit", func(c *Config) { c.ToolArrayLimits["memory_bulk_delete"] = 0 },
			[]string{"limits.toolArrayLimits.memory_bulk_delete"}},
		{"empty tool name", func(c *Config) { c.ToolArrayLimits[""] = 5 }, []string{"limits.toolArrayLimits"}},
		{"all reported", func(c *Config) { *c = Config{ToolArrayLimits: map[string]int{"a.b": -3}} },
			[]string{"limits.maxArraySize", "limits.maxStringLength", "limits.maxObjectDepth",
				"limits.maxRequestBytes", "limits.toolArrayLimits.a.b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, key := range tt.keys {
				if !strings.Contains(err.Error(), key+":") {
					t.Errorf("Validate() = %q, should name %s", err, key)
				}
			}
			if _, err := New(c); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, sep := range []string{"", ".", "____", " ", "é", "/"} {
		if _, err := New(DefaultConfig(), WithSeparator(sep)); err == nil {
			t.Errorf("WithSeparator(%q): New accepted it", sep)
		}
	}
	for _, sep := range []string{"_", "-", "__", "_-9"} {
		mustNew(t, DefaultConfig(), WithSeparator(sep))
	}

	// Keys that name the same tool must agree.
	c := DefaultConfig()
	c.ToolArrayLimits["memory.bulk_delete"] = 500
	_, err := New(c)
	if err == nil || !strings.Contains(err.Error(), "memory.bulk_delete") || !strings.Contains(err.Error(), "memory_bulk_delete") {
		t.Errorf("conflicting keys: New error = %v", err)
	}
	c.ToolArrayLimits["memory.bulk_delete"] = 1000
	if k := mustNew(t, c); k.ArrayLimit("memory.bulk_delete") != 1000 {
		t.Error("agreeing keys: wrong limit")
	}

	// New copies the map: later changes do not reach the checker.
	c = DefaultConfig()
	k := mustNew(t, c)
	c.ToolArrayLimits["memory_bulk_delete"] = 7
	if got := k.ArrayLimit("memory.bulk_delete"); got != 1000 {
		t.Errorf("after changing the config map: ArrayLimit = %d, want 1000", got)
	}

	// No tool limits at all.
	c.ToolArrayLimits = nil
	if got := mustNew(t, c).ArrayLimit("memory.bulk_delete"); got != 100 {
		t.Errorf("nil ToolArrayLimits: ArrayLimit = %d, want 100", got)
	}
}

func TestDefaultConfig(t *testing.T) {
	a, b := DefaultConfig(), DefaultConfig()
	want := Config{
		MaxArraySize: 100, MaxStringLength: 100_000, MaxObjectDepth: 10, MaxRequestBytes: 10 * 1024 * 1024,
		ToolArrayLimits: map[string]int{"bugfix_scan": 100, "refactor_scan": 100, "memory_bulk_delete": 1000, "ability_inject": 20},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("DefaultConfig() = %+v, want %+v", a, want)
	}
	a.ToolArrayLimits["x"] = 1
	if _, ok := b.ToolArrayLimits["x"]; ok {
		t.Error("DefaultConfig shares its ToolArrayLimits map between calls")
	}
	if _, ok := DefaultConfig().ToolArrayLimits["x"]; ok {
		t.Error("DefaultConfig returned a modified map")
	}
}

func TestValidateErrorsAreJoined(t *testing.T) {
	err := Config{}.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 4 {
		t.Errorf("Config{}.Validate() = %v, want 4 joined errors", err)
	}
}
