// Package guarded puts tools behind the runtime guardrails and into the
// MCP tool registry: it instantiates package pipeline with the MCP layer's
// call (handlers.ToolCall) and turns each guarded tool into a
// handlers.Tool. The server's own tools (runtimetools, statetools) and the
// federation's proxied tools all register through it, so every tool gets
// the same limits, timeout, envelope and trace (docs/architecture-layers.md).
package guarded

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
)

// Tool is a tool as its package declares it: Run gets the MCP call.
type Tool = pipeline.Tool[*handlers.ToolCall]

// Pipeline is the guardrail pipeline over MCP calls.
type Pipeline = pipeline.Pipeline[*handlers.ToolCall]

// New returns the pipeline with cfg's guardrails, whose gates use policy.
func New(cfg pipeline.Config, policy *guard.Policy, log zerolog.Logger) (*Pipeline, error) {
	return pipeline.New[*handlers.ToolCall](cfg, policy, log)
}

// Wrap returns t as a handlers.Tool with the guardrails around it.
func Wrap(p *Pipeline, t Tool) (handlers.Tool, error) {
	g, err := p.Wrap(t)
	if err != nil {
		return handlers.Tool{}, err
	}
	return handlers.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: g.Output, Annotations: t.Annotations,
		LongRunning: t.LongRunning,
		Precheck:    g.Precheck,
		Invalid:     g.Invalid,
		Handler:     g.Handler,
	}, nil
}

// Register wraps each tool and adds them all to reg.
func Register(reg *handlers.ToolRegistry, p *Pipeline, tools ...Tool) error {
	wrapped := make([]handlers.Tool, 0, len(tools))
	for _, t := range tools {
		ht, err := Wrap(p, t)
		if err != nil {
			return fmt.Errorf("register tool: %w", err)
		}
		wrapped = append(wrapped, ht)
	}
	return reg.Add(wrapped...)
}
