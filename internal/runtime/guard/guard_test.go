package guard

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

func TestBefore_Gates(t *testing.T) {
	arr := limits.Violation{Path: "/keys", Code: limits.CodeArrayTooLarge, Limit: 100, Actual: 150, Message: "too many"}
	str := limits.Violation{Path: "/value", Code: limits.CodeStringTooLong, Limit: 10, Actual: 11, Message: "too long"}
	cases := []struct {
		name     string
		pressure Pressure
		in       Input
		want     response.Code // "" passes
		warnings int64
	}{
		{"all clear", PressureLow, Input{Tool: "t", RequestBytes: 10}, "", 0},
		{"medium passes silently", PressureMedium, Input{Tool: "t"}, "", 0},
		{"high passes with a warning", PressureHigh, Input{Tool: "t"}, "", 1},
		{"critical rejects, retryable", PressureCritical, Input{Tool: "t"}, response.CodeMemoryPressure, 0},
		{"pressure is checked first", PressureCritical, Input{Tool: "t", Violations: []limits.Violation{arr}}, response.CodeMemoryPressure, 0},
		{"request size", PressureLow, Input{Tool: "t", RequestBytes: 2000}, response.CodeInvalidInput, 0},
		{"array size", PressureLow, Input{Tool: "t", Violations: []limits.Violation{str, arr}}, response.CodeArrayTooLarge, 0},
		{"other limits", PressureLow, Input{Tool: "t", Violations: []limits.Violation{str}}, response.CodeInvalidInput, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			p := NewPolicy(zerolog.New(&logs), 1000, func() Pressure { return tc.pressure })
			err := p.Before(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || err.Code != tc.want):
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if err != nil && !strings.Contains(logs.String(), `"gate"`) {
				t.Errorf("a rejection was not logged: %q", logs.String())
			}
			if got := p.Stats().PressureWarnings; got != tc.warnings {
				t.Errorf("pressure warnings = %d, want %d", got, tc.warnings)
			}
			if tc.want == response.CodeMemoryPressure && (!err.Code.Retryable() || err.RetryAfterMs <= 0) {
				t.Errorf("MEMORY_PRESSURE must be retryable with retryAfterMs: %+v", err)
			}
		})
	}
}

// Every violation is named (path, limit, actual: INV-MCP-LIMIT-004), and a
// flood of them is capped in what the error carries.
func TestBefore_ViolationsDescribedAndCapped(t *testing.T) {
	var vs []limits.Violation
	for i := range 50 {
		vs = append(vs, limits.Violation{Path: "/a/" + string(rune('a'+i%26)), Code: limits.CodeArrayTooLarge, Limit: 1, Actual: 2})
	}
	p := NewPolicy(zerolog.Nop(), 0, nil)
	err := p.Before(Input{Tool: "t", Violations: vs})
	if err == nil || err.Code != response.CodeArrayTooLarge {
		t.Fatalf("got %v", err)
	}
	shown, _ := err.Context["violations"].([]limits.Violation)
	if len(shown) != maxReported || err.Context["violationCount"] != 50 {
		t.Errorf("context carries %d violations, count %v; want %d and 50", len(shown), err.Context["violationCount"], maxReported)
	}
	if !strings.Contains(err.Message, "/a/a: ARRAY_TOO_LARGE (2, max 1)") || !strings.Contains(err.Message, "and 30 more") {
		t.Errorf("message %q does not describe the violations", err.Message)
	}
	b, _ := json.Marshal(err.Context)
	if !bytes.Contains(b, []byte(`"limit":1`)) || !bytes.Contains(b, []byte(`"actual":2`)) {
		t.Errorf("context JSON %s lacks limit/actual", b)
	}
}

// The timeout audit fires above 80 % of the timeout, with the ratio.
func TestAfter_NearTimeoutAudit(t *testing.T) {
	var logs bytes.Buffer
	p := NewPolicy(zerolog.New(&logs), 0, nil)
	p.After("fast", 50*time.Millisecond, time.Second)
	p.After("exactly", 800*time.Millisecond, time.Second)
	if logs.Len() != 0 || p.Stats().NearTimeoutAudits != 0 {
		t.Fatalf("audited a call at or under 80%%: %s", logs.String())
	}
	p.After("slow", 900*time.Millisecond, time.Second)
	if p.Stats().NearTimeoutAudits != 1 || !strings.Contains(logs.String(), `"event":"near_timeout"`) ||
		!strings.Contains(logs.String(), `"ratio":"90.0%"`) || !strings.Contains(logs.String(), `"tool":"slow"`) {
		t.Fatalf("audit line %q", logs.String())
	}
}

func TestLevelFor(t *testing.T) {
	for ratio, want := range map[float64]Pressure{0: PressureLow, 0.49: PressureLow, 0.5: PressureMedium, 0.8: PressureHigh, 0.9: PressureCritical, 1.5: PressureCritical} {
		if got := LevelFor(ratio); got != want {
			t.Errorf("LevelFor(%v) = %s, want %s", ratio, got, want)
		}
	}
}

// TestINV_MCP_XC_003_MonitorStops: the pressure sampler's goroutine ends on
// Close.
func TestINV_MCP_XC_003_MonitorStops(t *testing.T) {
	m := NewMonitor(time.Millisecond)
	if m.Level() == "" {
		t.Fatal("no level")
	}
	m.Close()
	m.Close() // idempotent
	select {
	case <-m.done:
	default:
		t.Fatal("sampler still running after Close")
	}
}

// The monitor's level is the highest of the process's and its sources',
// so a cache at critical pressure closes the gate (the PRD's
// memory-pressure check reads the cache's pressureLevel).
func TestMonitorSources(t *testing.T) {
	var cache atomic.Value
	cache.Store(PressureLow)
	m := NewMonitor(time.Millisecond, func() Pressure { return cache.Load().(Pressure) }, func() Pressure { return "bogus" })
	defer m.Close()
	for _, want := range []Pressure{PressureHigh, PressureCritical, PressureLow} {
		cache.Store(want)
		deadline := time.Now().Add(2 * time.Second)
		for m.Level() != want {
			if time.Now().After(deadline) {
				t.Fatalf("level %s, want %s from the cache source", m.Level(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
