package response_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

type memoryEntry struct {
	Namespace string   `json:"namespace"`
	Key       string   `json:"key"`
	Value     string   `json:"value"`
	Version   int      `json:"version"`
	Tags      []string `json:"tags"`
}

func TestINV_MCP_RESP_001_ConsistentEnvelope(t *testing.T) {
	s := compileEnvelopeSchema(t)
	small := response.Limits{MaxResponseBytes: 2048, MaxListItems: 3, MaxStringLength: 20, TruncationSuffix: "…"}
	success := []struct {
		name string
		data any
		l    response.Limits
	}{
		{"struct", memoryEntry{"default", "greeting", "hello <world> & you", 3, []string{"a", "b"}}, response.DefaultLimits()},
		{"pointer", &memoryEntry{Key: "k"}, response.DefaultLimits()},
		{"nil", nil, response.DefaultLimits()},
		{"empty raw", json.RawMessage(nil), response.DefaultLimits()},
		{"raw with space and escapes", json.RawMessage(" {\"a\" : [1, 2.5e3, true, null], \"s\": \"\\u003c\\/\\ud83d\\ude00\" } "), response.DefaultLimits()},
		{"string", "just text", response.DefaultLimits()},
		{"number", 42, response.DefaultLimits()},
		{"list", []int{1, 2, 3}, response.DefaultLimits()},
		{"truncated list", []int{1, 2, 3, 4, 5}, small},
		{"truncated string", strings.Repeat("é", 100), small},
		{"last resort", map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10,
			"k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18, "s": 19, "t": 20, "u": 21, "v": 22,
			"w": 23, "x": 24, "y": 25, "z": 26, "aa": 27, "ab": 28, "ac": 29, "ad": 30, "ae": 31, "af": 32, "ag": 33,
			"ah": 34, "ai": 35, "aj": 36, "ak": 37, "al": 38, "am": 39, "an": 40, "ao": 41, "ap": 42, "aq": 43, "ar": 44,
			"as": 45, "at": 46, "au": 47, "av": 48, "aw": 49, "ax": 50, "ay": 51, "az": 52, "ba": 53, "bb": 54, "bc": 55,
			"bd": 56, "be": 57, "bf": 58, "bg": 59, "bh": 60, "bi": 61, "bj": 62, "bk": 63, "bl": 64, "bm": 65}, small},
	}
	for _, tc := range success {
		t.Run("success/"+tc.name, func(t *testing.T) {
			r, err := response.Success(tc.data, response.Metadata{DurationMs: 7}, tc.l)
			if err != nil {
				t.Fatal(err)
			}
			env, _ := checkResult(t, s, r)
			if !*env.Success || r.IsError || env.Error != nil || env.Data == nil {
				t.Fatalf("not a success envelope: %s", r.StructuredContent)
			}
		})
	}

	failure := []struct {
		name string
		err  *response.Error
	}{
		{"plain", response.NewError(response.CodeNotFound, "memory %q not found", "greeting")},
		{"context", response.NewError(response.CodeArrayTooLarge, "too many items").
			WithContext("path", "/items").WithContext("limit", 100).WithContext("actual", 150)},
		{"retryable with delay", response.NewError(response.CodeRateLimited, "slow down").WithRetryAfter(2 * time.Second)},
		{"empty message", &response.Error{Code: response.CodeConflict}},
		{"invalid code", &response.Error{Code: "BOGUS", Message: "x"}},
		{"nil", nil},
		{"long message", &response.Error{Code: response.CodeInternalError, Message: strings.Repeat("\x00", 5000)}},
		{"huge context", response.NewError(response.CodeInvalidInput, "bad").WithContext("blob", strings.Repeat("\"", 100000))},
	}
	for _, tc := range failure {
		t.Run("failure/"+tc.name, func(t *testing.T) {
			r := response.Failure(tc.err, response.Metadata{DurationMs: 7}, small)
			env, _ := checkResult(t, s, r)
			if *env.Success || !r.IsError || env.Data != nil || env.Error == nil {
				t.Fatalf("not a failure envelope: %s", r.StructuredContent)
			}
		})
	}

	// The schema is the contract: it must reject what is not an envelope.
	bad := map[string]string{
		"success without data":        `{"success":true,"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"success with error":          `{"success":true,"data":1,"error":{"code":"NOT_FOUND","message":"x","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"failure without error":       `{"success":false,"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"failure with data":           `{"success":false,"data":1,"error":{"code":"NOT_FOUND","message":"x","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"no metadata":                 `{"success":true,"data":1}`,
		"negative duration":           `{"success":true,"data":1,"metadata":{"durationMs":-1,"cached":false,"truncated":false}}`,
		"unknown code":                `{"success":false,"error":{"code":"NOPE","message":"x","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"no code":                     `{"success":false,"error":{"message":"x","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"empty message":               `{"success":false,"error":{"code":"NOT_FOUND","message":"","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"message too long":            `{"success":false,"error":{"code":"NOT_FOUND","message":"` + strings.Repeat("x", 1001) + `","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"wrongly retryable":           `{"success":false,"error":{"code":"NOT_FOUND","message":"x","retryable":true},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"wrongly not retryable":       `{"success":false,"error":{"code":"RATE_LIMITED","message":"x","retryable":false},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"retryAfterMs non-retryable":  `{"success":false,"error":{"code":"NOT_FOUND","message":"x","retryable":false,"retryAfterMs":5},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"extra member":                `{"success":true,"data":1,"extra":1,"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"not an object":               `[]`,
		"retryAfterMs zero":           `{"success":false,"error":{"code":"RATE_LIMITED","message":"x","retryable":true,"retryAfterMs":0},"metadata":{"durationMs":0,"cached":false,"truncated":false}}`,
		"metadata lacking truncation": `{"success":true,"data":1,"metadata":{"durationMs":0,"cached":false}}`,
	}
	for name, doc := range bad {
		if err := validateJSON(s, []byte(doc)); err == nil {
			t.Errorf("schema accepts %s: %s", name, doc)
		}
	}
}

func TestEnvelopeSchemaIsFreshAndAnObjectSchema(t *testing.T) {
	a := response.EnvelopeSchema()
	want := string(a)
	for i := range a {
		a[i] = 'x'
	}
	b := response.EnvelopeSchema()
	if string(b) != want {
		t.Fatal("EnvelopeSchema shares storage between calls")
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil || doc["type"] != "object" {
		t.Fatalf("schema must be an object schema (MCP outputSchema): %v %v", err, doc["type"])
	}
	compileEnvelopeSchema(t)
}

func TestINV_MCP_RESP_002_ErrorCodeRequired(t *testing.T) {
	s := compileEnvelopeSchema(t)
	codes := response.Codes()
	if len(codes) != 17 {
		t.Fatalf("%d codes, want 14 + 3", len(codes))
	}
	seen := map[response.Code]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Fatalf("duplicate code %s", c)
		}
		seen[c] = true
	}
	for _, c := range []response.Code{response.CodeAmbiguousTool, response.CodeConnectionTimeout, response.CodeInvocationFailed} {
		if !seen[c] {
			t.Errorf("ecosystem code %s missing", c)
		}
	}
	// The schema's enum is Codes(), no more, no less.
	var doc struct {
		Properties struct {
			Error struct {
				Properties struct {
					Code struct {
						Enum []response.Code `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"error"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(response.EnvelopeSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Properties.Error.Properties.Code.Enum, codes) {
		t.Fatalf("schema enum %v, want %v", doc.Properties.Error.Properties.Code.Enum, codes)
	}

	for _, c := range codes {
		t.Run(string(c), func(t *testing.T) {
			if !c.Valid() {
				t.Fatal("not valid")
			}
			env, _ := checkResult(t, s, response.Failure(response.NewError(c, "m"), response.Metadata{}, response.DefaultLimits()))
			if got := env.err(t).Code; got != string(c) {
				t.Fatalf("encoded code %q", got)
			}
		})
	}

	// Invalid or missing codes are encoded as INTERNAL_ERROR, message kept.
	for _, tc := range []struct {
		name    string
		err     *response.Error
		message string
	}{
		{"empty code", &response.Error{Message: "lost"}, "lost"},
		{"unknown code", &response.Error{Code: "NOT_A_CODE", Message: "odd"}, "odd"},
		{"lower case", &response.Error{Code: "not_found", Message: "case"}, "case"},
		{"empty code and message", &response.Error{}, "internal error"},
		{"nil error", nil, "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err != nil && tc.err.Code.Valid() {
				t.Fatal("code is valid")
			}
			env, _ := checkResult(t, s, response.Failure(tc.err, response.Metadata{}, response.DefaultLimits()))
			se := env.err(t)
			if se.Code != string(response.CodeInternalError) || *se.Message != tc.message {
				t.Fatalf("got %s %q, want INTERNAL_ERROR %q", se.Code, *se.Message, tc.message)
			}
			if tc.err != nil && !strings.HasPrefix(tc.err.Error(), "INTERNAL_ERROR: ") {
				t.Fatalf("Error() = %q", tc.err.Error())
			}
		})
	}
}

func TestINV_MCP_RESP_004_TruncationTransparency(t *testing.T) {
	s := compileEnvelopeSchema(t)
	const suffix = "... [truncated]"
	l := response.Limits{MaxResponseBytes: 1 << 20, MaxListItems: 5, MaxStringLength: 40, TruncationSuffix: suffix}
	ints := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	type list struct {
		Items   []json.RawMessage `json:"items"`
		Total   int               `json:"total"`
		Limit   int               `json:"limit"`
		Offset  *int              `json:"offset"`
		HasMore bool              `json:"hasMore"`
	}
	wantList := func(t *testing.T, raw json.RawMessage, total, limit int) {
		t.Helper()
		var lo list
		if err := json.Unmarshal(raw, &lo); err != nil {
			t.Fatalf("not a list object: %s", raw)
		}
		if len(lo.Items) != limit || lo.Total != total || lo.Limit != limit || lo.Offset == nil || *lo.Offset != 0 || !lo.HasMore {
			t.Fatalf("list object %s, want %d of %d", raw, limit, total)
		}
		for i, it := range lo.Items { // the first items, in order
			if string(it) != fmt.Sprint(i) {
				t.Fatalf("item %d is %s", i, it)
			}
		}
	}
	success := func(t *testing.T, data any, l response.Limits) (envelope, int) {
		t.Helper()
		r, err := response.Success(data, response.Metadata{DurationMs: 1}, l)
		if err != nil {
			t.Fatal(err)
		}
		return checkResult(t, s, r)
	}

	t.Run("list at the limit", func(t *testing.T) {
		env, _ := success(t, ints(5), l)
		if env.truncated() || string(env.Data) != "[0,1,2,3,4]" {
			t.Fatalf("truncated %v, data %s", env.truncated(), env.Data)
		}
	})
	t.Run("list over the limit", func(t *testing.T) {
		env, _ := success(t, ints(6), l)
		if !env.truncated() {
			t.Fatal("not marked truncated")
		}
		wantList(t, env.Data, 6, 5)
	})
	t.Run("nested list", func(t *testing.T) {
		env, _ := success(t, []any{map[string]any{"inner": ints(100)}}, l)
		var outer []map[string]json.RawMessage
		if err := json.Unmarshal(env.Data, &outer); err != nil {
			t.Fatalf("data %s", env.Data)
		}
		if !env.truncated() {
			t.Fatal("not marked truncated")
		}
		wantList(t, outer[0]["inner"], 100, 5)
	})
	t.Run("string at the limit", func(t *testing.T) {
		v := strings.Repeat("é", 20) + strings.Repeat("😀", 20)
		env, _ := success(t, map[string]string{"v": v}, l)
		if env.truncated() || string(env.Data) != `{"v":"`+v+`"}` {
			t.Fatalf("truncated %v, data %s", env.truncated(), env.Data)
		}
	})
	t.Run("string over the limit", func(t *testing.T) {
		v := strings.Repeat("é", 20) + strings.Repeat("😀", 21)
		env, _ := success(t, v, l)
		var got string
		if err := json.Unmarshal(env.Data, &got); err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat("é", 20) + strings.Repeat("😀", 40-20-len(suffix)) + suffix
		if !env.truncated() || got != want || utf8.RuneCountInString(got) != 40 {
			t.Fatalf("truncated %v, got %q, want %q", env.truncated(), got, want)
		}
	})
	t.Run("escapes count as one character", func(t *testing.T) {
		v := strings.Repeat("\"\n\x01", 13) + "x" // 40 characters, 2 or 6 bytes each when escaped
		env, _ := success(t, v, l)
		if env.truncated() {
			t.Fatalf("cut %s", env.Data)
		}
		env, _ = success(t, v+"y", l)
		var got string
		_ = json.Unmarshal(env.Data, &got)
		if !env.truncated() || got != strings.Repeat("\"\n\x01", 13)[:25]+suffix {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("member names are not cut", func(t *testing.T) {
		k := strings.Repeat("k", 100)
		env, _ := success(t, map[string]int{k: 1}, l)
		if env.truncated() || string(env.Data) != `{"`+k+`":1}` {
			t.Fatalf("data %s", env.Data)
		}
	})

	// Exactly at MaxResponseBytes: nothing is cut; one byte less: cut.
	data := make([]string, 5)
	sized := response.Limits{MaxResponseBytes: 1 << 20, MaxListItems: 5, MaxStringLength: 200, TruncationSuffix: suffix}
	for i := range data { // 5 strings at the limit: nothing but the size can cut
		data[i] = strings.Repeat(string(rune('a'+i)), 200)
	}
	_, exact := success(t, data, sized)
	if exact < 1024 {
		t.Fatalf("test data too small: %d bytes", exact)
	}
	t.Run("response at the limit", func(t *testing.T) {
		at := sized
		at.MaxResponseBytes = exact
		env, size := success(t, data, at)
		if env.truncated() || size != exact {
			t.Fatalf("truncated %v, size %d of %d", env.truncated(), size, exact)
		}
	})
	t.Run("response one byte over", func(t *testing.T) {
		at := sized
		at.MaxResponseBytes = exact - 1
		env, size := success(t, data, at)
		if !env.truncated() || size > exact-1 {
			t.Fatalf("truncated %v, size %d > %d", env.truncated(), size, exact-1)
		}
	})
	t.Run("last resort", func(t *testing.T) {
		m := map[string]int{}
		for i := range 500 {
			m[fmt.Sprintf("member-%03d", i)] = i
		}
		raw, _ := json.Marshal(m)
		at := l
		at.MaxResponseBytes = 1024
		env, size := success(t, m, at)
		want := fmt.Sprintf(`{"truncated":true,"reason":"response exceeds maxResponseBytes","originalBytes":%d}`, len(raw))
		if !env.truncated() || string(env.Data) != want || size > 1024 {
			t.Fatalf("data %s (%d bytes)", env.Data, size)
		}
	})
	t.Run("caller cut", func(t *testing.T) {
		r, _ := response.Success(1, response.Metadata{Truncated: true}, l)
		if env, _ := checkResult(t, s, r); !env.truncated() {
			t.Fatal("caller's truncated flag lost")
		}
	})

	failure := func(t *testing.T, e *response.Error, l response.Limits) (envelope, structuredError) {
		t.Helper()
		env, _ := checkResult(t, s, response.Failure(e, response.Metadata{}, l))
		return env, env.err(t)
	}
	t.Run("message at 1000 characters", func(t *testing.T) {
		msg := strings.Repeat("é", 1000)
		env, se := failure(t, &response.Error{Code: response.CodeInvalidInput, Message: msg}, l)
		if env.truncated() || *se.Message != msg {
			t.Fatal("message cut")
		}
	})
	t.Run("message over 1000 characters", func(t *testing.T) {
		env, se := failure(t, &response.Error{Code: response.CodeInvalidInput, Message: strings.Repeat("é", 1001)}, l)
		if !env.truncated() || *se.Message != strings.Repeat("é", 1000-len(suffix))+suffix {
			t.Fatalf("truncated %v, message %q", env.truncated(), *se.Message)
		}
	})
	t.Run("context list", func(t *testing.T) {
		env, se := failure(t, response.NewError(response.CodeArrayTooLarge, "x").WithContext("ids", ints(9)), l)
		if !env.truncated() {
			t.Fatal("not marked truncated")
		}
		raw, _ := json.Marshal(se.Context["ids"])
		wantList(t, raw, 9, 5)
	})
	t.Run("context that cannot fit", func(t *testing.T) {
		at := l
		at.MaxResponseBytes = 1024
		keys := response.NewError(response.CodeConflict, "x")
		for i := range 200 {
			keys.WithContext(fmt.Sprint(i), i)
		}
		env, se := failure(t, keys, at)
		if !env.truncated() || se.Context != nil || *se.Message != "x" {
			t.Fatalf("got %s", env.Error)
		}
	})
	t.Run("context value that cannot be encoded", func(t *testing.T) {
		env, se := failure(t, response.NewError(response.CodeConflict, "x").WithContext("ch", make(chan int)).WithContext("ok", 1), l)
		if !env.truncated() || len(se.Context) != 1 || se.Context["ok"] != 1.0 {
			t.Fatalf("got %s", env.Error)
		}
	})
	t.Run("failure within limits", func(t *testing.T) {
		env, _ := failure(t, response.NewError(response.CodeConflict, "x").WithContext("path", "/a").WithContext("limit", 5), l)
		if env.truncated() {
			t.Fatal("marked truncated")
		}
	})
}

func TestINV_MCP_RESP_005_DurationTracking(t *testing.T) {
	s := compileEnvelopeSchema(t)
	for _, tc := range []struct {
		in, want int64
	}{{0, 0}, {1, 1}, {1234, 1234}, {-5, 0}, {1<<63 - 1, 1<<63 - 1}, {-1 << 63, 0}} {
		meta := response.Metadata{DurationMs: tc.in}
		r, err := response.Success(map[string]int{"a": 1}, meta, response.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		results := []*protocol.CallToolResult{r, response.Failure(response.NewError(response.CodeToolTimeout, "late"), meta, response.DefaultLimits())}
		for _, r := range results {
			env, _ := checkResult(t, s, r)
			if got := *env.Metadata.DurationMs; got != tc.want {
				t.Errorf("durationMs(%d) = %d, want %d (isError %v)", tc.in, got, tc.want, r.IsError)
			}
		}
	}
}

func TestINV_MCP_RESP_006_RetryableAccuracy(t *testing.T) {
	s := compileEnvelopeSchema(t)
	var retryable []response.Code
	for _, c := range response.Codes() {
		if c.Retryable() {
			retryable = append(retryable, c)
		}
	}
	want := []response.Code{response.CodeToolTimeout, response.CodeRateLimited, response.CodeMemoryPressure, response.CodeServiceUnavailable}
	if !slices.Equal(retryable, want) {
		t.Fatalf("retryable set %v, want %v", retryable, want)
	}
	if response.Code("").Retryable() || response.Code("NOPE").Retryable() {
		t.Fatal("an invalid code is retryable")
	}
	for _, c := range response.Codes() {
		for _, after := range []time.Duration{0, 1500 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/%v", c, after), func(t *testing.T) {
				env, _ := checkResult(t, s, response.Failure(response.NewError(c, "m").WithRetryAfter(after), response.Metadata{}, response.DefaultLimits()))
				se := env.err(t)
				if se.Retryable == nil || *se.Retryable != c.Retryable() {
					t.Fatalf("retryable %v, want %v", se.Retryable, c.Retryable())
				}
				wantAfter := after > 0 && c.Retryable()
				if (se.RetryAfterMs != nil) != wantAfter {
					t.Fatalf("retryAfterMs %v present, want %v", se.RetryAfterMs, wantAfter)
				}
				if wantAfter && *se.RetryAfterMs != 1500 {
					t.Fatalf("retryAfterMs %d", *se.RetryAfterMs)
				}
			})
		}
	}
	// An invalid code is INTERNAL_ERROR, so not retryable, delay or not.
	env, _ := checkResult(t, s, response.Failure(&response.Error{Code: "NOPE", RetryAfterMs: 10}, response.Metadata{}, response.DefaultLimits()))
	if se := env.err(t); *se.Retryable || se.RetryAfterMs != nil {
		t.Fatalf("invalid code: %s", env.Error)
	}
}

func TestWithRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {2 * time.Second, 2000}} {
		if got := response.NewError(response.CodeRateLimited, "x").WithRetryAfter(tc.d).RetryAfterMs; got != tc.want {
			t.Errorf("WithRetryAfter(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestFromError(t *testing.T) {
	typed := response.NewError(response.CodeNotFound, "no such key")
	deadline, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-deadline.Done()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for _, tc := range []struct {
		name    string
		err     error
		same    *response.Error
		code    response.Code
		message string
	}{
		{"nil", nil, nil, "", ""},
		{"typed", typed, typed, response.CodeNotFound, "no such key"},
		{"wrapped typed", fmt.Errorf("get: %w", typed), typed, response.CodeNotFound, "no such key"},
		{"deadline", context.DeadlineExceeded, nil, response.CodeToolTimeout, "the operation timed out"},
		{"context deadline", deadline.Err(), nil, response.CodeToolTimeout, "the operation timed out"},
		{"wrapped deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), nil, response.CodeToolTimeout, "the operation timed out"},
		{"cancelled", cancelled.Err(), nil, response.CodeOperationFailed, "cancelled"},
		{"wrapped cancelled", fmt.Errorf("query: %w", context.Canceled), nil, response.CodeOperationFailed, "cancelled"},
		{"other", errors.New("dial tcp db.internal:5432: password authentication failed for user admin"), nil, response.CodeInternalError, "internal error"},
		{"typed nil pointer", (*response.Error)(nil), nil, response.CodeInternalError, "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := response.FromError(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("FromError(nil) = %v", got)
				}
				return
			}
			if tc.same != nil && got != tc.same {
				t.Fatalf("got %p, want the same *Error %p", got, tc.same)
			}
			if got.Code != tc.code || got.Message != tc.message {
				t.Fatalf("got %s %q, want %s %q", got.Code, got.Message, tc.code, tc.message)
			}
			if got.Code == response.CodeInternalError && strings.Contains(got.Error(), "password") {
				t.Fatal("internal error text leaked")
			}
		})
	}
}

func TestMessageClipping(t *testing.T) {
	s := compileEnvelopeSchema(t)
	l := response.DefaultLimits()
	for _, tc := range []struct {
		name, msg, want string
		code            response.Code
		cut             bool
	}{
		{"empty takes the default", "", "not found", response.CodeNotFound, false},
		{"short", "gone", "gone", response.CodeNotFound, false},
		{"1000 ASCII", strings.Repeat("a", 1000), strings.Repeat("a", 1000), response.CodeNotFound, false},
		{"1001 ASCII", strings.Repeat("a", 1001), strings.Repeat("a", 1000-15) + l.TruncationSuffix, response.CodeNotFound, true},
		{"multi-byte", strings.Repeat("😀", 1500), strings.Repeat("😀", 1000-15) + l.TruncationSuffix, response.CodeNotFound, true},
		{"invalid UTF-8 counts per byte", strings.Repeat("\xff", 1000), strings.Repeat("\uFFFD", 1000), response.CodeNotFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := checkResult(t, s, response.Failure(&response.Error{Code: tc.code, Message: tc.msg}, response.Metadata{}, l))
			got := *env.err(t).Message
			if got != tc.want || env.truncated() != tc.cut {
				t.Fatalf("message %q (truncated %v), want %q (%v)", got, env.truncated(), tc.want, tc.cut)
			}
			if n := utf8.RuneCountInString(got); n < 1 || n > 1000 {
				t.Fatalf("message of %d characters", n)
			}
		})
	}
	if got := response.NewError(response.CodeNotFound, "key %s", "k").Error(); got != "NOT_FOUND: key k" {
		t.Fatalf("Error() = %q", got)
	}
	if got := (&response.Error{Code: response.CodeRateLimited}).Error(); got != "RATE_LIMITED: rate limited" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestLimitsValidate(t *testing.T) {
	d := response.DefaultLimits()
	if d != (response.Limits{MaxResponseBytes: 1 << 20, MaxListItems: 100, MaxStringLength: 10000, TruncationSuffix: "... [truncated]"}) {
		t.Fatalf("defaults %+v", d)
	}
	with := func(f func(*response.Limits)) response.Limits {
		l := response.DefaultLimits()
		f(&l)
		return l
	}
	for _, tc := range []struct {
		name string
		l    response.Limits
		keys []string // named in the error; none: valid
	}{
		{"defaults", d, nil},
		{"minimum size", with(func(l *response.Limits) { l.MaxResponseBytes = 1024 }), nil},
		{"empty suffix", with(func(l *response.Limits) { l.TruncationSuffix = ""; l.MaxStringLength = 1 }), nil},
		{"small size", with(func(l *response.Limits) { l.MaxResponseBytes = 1023 }), []string{"response.maxResponseBytes"}},
		{"zero items", with(func(l *response.Limits) { l.MaxListItems = 0 }), []string{"response.maxListItems"}},
		{"negative string length", with(func(l *response.Limits) { l.MaxStringLength = -1 }), []string{"response.maxStringLength"}},
		{"string length within suffix", with(func(l *response.Limits) { l.MaxStringLength = 15 }), []string{"response.maxStringLength", "response.truncationSuffix"}},
		{"invalid suffix", with(func(l *response.Limits) { l.TruncationSuffix = "\xff" }), []string{"response.truncationSuffix"}},
		{"zero value", response.Limits{}, []string{"response.maxResponseBytes", "response.maxListItems", "response.maxStringLength"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if len(tc.keys) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}

// Limits that skipped Validate are repaired, never trusted.
func TestUnvalidatedLimits(t *testing.T) {
	s := compileEnvelopeSchema(t)
	for _, l := range []response.Limits{
		{},
		{MaxResponseBytes: 10, MaxListItems: -1, MaxStringLength: 2, TruncationSuffix: "long suffix\xff"},
	} {
		data := map[string]any{"list": make([]int, 300), "text": strings.Repeat("x", 20000)}
		r, err := response.Success(data, response.Metadata{}, l)
		if err != nil {
			t.Fatal(err)
		}
		env, size := checkResult(t, s, r)
		if !env.truncated() || size > max(l.MaxResponseBytes, 1024) && l.MaxResponseBytes != 0 {
			t.Fatalf("limits %+v: size %d, truncated %v", l, size, env.truncated())
		}
		checkResult(t, s, response.Failure(&response.Error{Code: response.CodeInvalidInput, Message: strings.Repeat("\x00", 2000)}, response.Metadata{}, l))
	}
}

func TestSuccessErrors(t *testing.T) {
	if _, err := response.Success(make(chan int), response.Metadata{}, response.DefaultLimits()); err == nil {
		t.Fatal("no error for unmarshalable data")
	}
	if _, err := response.Success(json.RawMessage(`{"a":`), response.Metadata{}, response.DefaultLimits()); err == nil {
		t.Fatal("no error for invalid raw JSON")
	}
}
