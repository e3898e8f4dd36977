package main

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/echotest"
)

func BenchmarkInProcess_ToolsCall(b *testing.B) {
	echotest.BenchmarkToolsCall(b, newHandler(), "echo")
}

func BenchmarkInProcess_MemoryRetrieve(b *testing.B) {
	echotest.BenchmarkMemoryRetrieve(b, newHandler())
}
