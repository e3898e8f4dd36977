package response_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

func BenchmarkSuccessSmall(b *testing.B) {
	data := memoryEntry{Namespace: "default", Key: "user:123:prefs", Value: "dark theme, English", Version: 3, Tags: []string{"prefs", "ui"}}
	meta, l := response.Metadata{DurationMs: 3}, response.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := response.Success(data, meta, l); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSuccessTruncating(b *testing.B) {
	data := make([]memoryEntry, 10_000)
	for i := range data {
		data[i] = memoryEntry{Namespace: "default", Key: fmt.Sprintf("key-%05d", i), Value: "some value", Version: i}
	}
	meta, l := response.Metadata{DurationMs: 3}, response.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		r, err := response.Success(data, meta, l)
		if err != nil || r.IsError {
			b.Fatal(err)
		}
	}
}

// BenchmarkSuccessOversized needs the size reduction: 100 strings of 10,000
// characters each (the default caps) do not fit in 1 MiB.
func BenchmarkSuccessOversized(b *testing.B) {
	data := make([]string, 100)
	for i := range data {
		data[i] = fmt.Sprintf("%010000d", i)
	}
	meta, l := response.Metadata{DurationMs: 3}, response.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := response.Success(data, meta, l); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFailure(b *testing.B) {
	meta, l := response.Metadata{DurationMs: 3}, response.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		e := response.NewError(response.CodeArrayTooLarge, "too many items").WithContext("path", "/items").WithContext("limit", 100).WithContext("actual", 150)
		response.Failure(e, meta, l)
	}
}

// BenchmarkPassThrough is a proxied tools/call's result as a small
// upstream tool returns it: one text block, with and without the
// upstream's own _meta.
func BenchmarkPassThrough(b *testing.B) {
	for _, tc := range []struct {
		name string
		in   response.Passed
	}{
		{"text", response.Passed{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hello"}`)}, Attempts: 1}},
		{"text+meta", response.Passed{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hello"}`)},
			Meta: json.RawMessage(`{"progressToken":"p-1","com.example/trace":{"id":"abc"}}`), Attempts: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			meta, l := response.Metadata{DurationMs: 3}, response.DefaultLimits()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := response.PassThrough(tc.in, meta, l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
