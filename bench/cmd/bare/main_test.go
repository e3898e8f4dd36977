package main

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/echotest"
)

func TestEcho(t *testing.T) {
	echotest.Check(t, newHandler())
}

func TestModern(t *testing.T) {
	echotest.CheckModern(t, newHandler())
}
