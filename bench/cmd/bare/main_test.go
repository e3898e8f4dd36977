package main

import (
	"net/http"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/echotest"
)

func TestEcho(t *testing.T) {
	echotest.Check(t, http.HandlerFunc(handleMCP))
}
