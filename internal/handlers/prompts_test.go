package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func greetPrompt(got *map[string]string) Prompt {
	return Prompt{
		Prompt: protocol.Prompt{
			Name:        "greet",
			Description: "greets someone",
			Arguments: []protocol.PromptArgument{
				{Name: "name", Required: true},
				{Name: "style"},
			},
		},
		Get: func(_ context.Context, _ Session, args map[string]string) (*protocol.GetPromptResult, error) {
			if got != nil {
				*got = args
			}
			return &protocol.GetPromptResult{
				Description: "a greeting",
				Messages: []protocol.PromptMessage{{
					Role:    "user",
					Content: protocol.TextContent("Say hello to " + args["name"] + " " + args["style"]),
				}},
			}, nil
		},
		Complete: func(_ context.Context, _ Session, argument, prefix string) ([]string, error) {
			var out []string
			for _, v := range []string{"alice", "albert", "bob"} {
				if argument == "name" && strings.HasPrefix(v, prefix) {
					out = append(out, v)
				}
			}
			return out, nil
		},
	}
}

func plainPrompt(name string, get func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error)) Prompt {
	return Prompt{Prompt: protocol.Prompt{Name: name, Description: "prompt " + name}, Get: get}
}

func TestPrompts(t *testing.T) {
	var got map[string]string
	e := newEnv(t)
	for _, p := range []Prompt{
		greetPrompt(&got),
		plainPrompt("nil.messages", func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
			return &protocol.GetPromptResult{}, nil
		}),
		plainPrompt("failing", func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
			return nil, errors.New("template store down")
		}),
	} {
		if err := e.s.AddPrompt(p); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("list", func(t *testing.T) {
		items, pages := listAll(t, e, protocol.MethodPromptsList, "prompts")
		var names []string
		for _, it := range items {
			p := unmarshal[protocol.Prompt](t, it)
			names = append(names, p.Name)
			if p.Name == "greet" && (len(p.Arguments) != 2 || !p.Arguments[0].Required || p.Arguments[1].Required) {
				t.Errorf("greet arguments = %+v", p.Arguments)
			}
		}
		// By name, not in registration order (docs/adr/0052-list-order-and-cursors.md).
		if want := []string{"failing", "greet", "nil.messages"}; !slices.Equal(names, want) || pages != 2 {
			t.Fatalf("prompts = %v in %d pages, want %v in 2", names, pages, want)
		}
	})
	t.Run("get with arguments", func(t *testing.T) {
		res := unmarshal[protocol.GetPromptResult](t, e.ok(t, protocol.MethodPromptsGet, `{"name":"greet","arguments":{"name":"Ada","style":"warmly"}}`))
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != "Say hello to Ada warmly" {
			t.Fatalf("result = %+v", res)
		}
		if got["name"] != "Ada" || got["style"] != "warmly" || len(got) != 2 {
			t.Errorf("Get received %v", got)
		}
	})
	t.Run("optional argument omitted", func(t *testing.T) {
		res := unmarshal[protocol.GetPromptResult](t, e.ok(t, protocol.MethodPromptsGet, `{"name":"greet","arguments":{"name":"Ada"}}`))
		if len(res.Messages) != 1 || res.Messages[0].Content.Text != "Say hello to Ada " {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("nil messages is an empty array", func(t *testing.T) {
		m := members(t, e.ok(t, protocol.MethodPromptsGet, `{"name":"nil.messages"}`))
		if string(m["messages"]) != "[]" {
			t.Fatalf("messages = %s", m["messages"])
		}
	})
	t.Run("Get failure is an internal error", func(t *testing.T) {
		_, _, err := e.handle(protocol.MethodPromptsGet, `{"name":"failing"}`)
		var perr *protocol.Error
		if err == nil || errors.As(err, &perr) || !strings.Contains(err.Error(), "template store down") {
			t.Fatalf("error = %v", err)
		}
	})
	for name, tc := range map[string]struct{ params, want string }{
		"missing required argument":     {`{"name":"greet","arguments":{"style":"x"}}`, `"name"`},
		"no arguments at all":           {`{"name":"greet"}`, `"name"`},
		"unknown prompt":                {`{"name":"nope"}`, "nope"},
		"missing name":                  {`{}`, "prompt"},
		"absent params":                 {``, "prompt"},
		"argument values not strings":   {`{"name":"greet","arguments":{"name":1}}`, "arguments"},
		"arguments not an object":       {`{"name":"greet","arguments":["Ada"]}`, "arguments"},
		"name of the wrong type":        {`{"name":["greet"]}`, `"name"`},
		"canonical-looking tool name":   {`{"name":"greet.x"}`, "greet.x"},
		"case differs from a real name": {`{"name":"Greet"}`, "Greet"},
	} {
		t.Run(name, func(t *testing.T) {
			perr := e.fails(t, protocol.CodeInvalidParams, protocol.MethodPromptsGet, tc.params)
			if !strings.Contains(perr.Message, tc.want) {
				t.Errorf("message %q does not contain %q", perr.Message, tc.want)
			}
		})
	}
}

// TestPromptGetNilResult: a Get that returns neither a result nor an error
// is a server bug, reported like a tool returning no result (an internal
// error), not a panic that takes the request down.
func TestPromptGetNilResult(t *testing.T) {
	e := newEnv(t)
	if err := e.s.AddPrompt(plainPrompt("nil.result", func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	var (
		res any
		err error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("prompts/get panicked: %v", p)
			}
		}()
		_, res, err = e.handle(protocol.MethodPromptsGet, `{"name":"nil.result"}`)
	}()
	var perr *protocol.Error
	if err == nil || errors.As(err, &perr) {
		t.Fatalf("result %#v, error %v; want a plain (internal) error", res, err)
	}
}

func TestPromptRegistration(t *testing.T) {
	get := func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) { return nil, nil }
	e := newEnv(t)
	for _, p := range []Prompt{
		{Prompt: protocol.Prompt{Description: "d"}, Get: get},
		{Prompt: protocol.Prompt{Name: "p"}, Get: get},
		{Prompt: protocol.Prompt{Name: "p", Description: "d"}},
	} {
		if err := e.s.AddPrompt(p); err == nil {
			t.Errorf("AddPrompt(%+v) succeeded", p.Prompt)
		}
	}
	if err := e.s.AddPrompt(plainPrompt("p", get)); err != nil {
		t.Fatal(err)
	}
	if err := e.s.AddPrompt(plainPrompt("p", get)); err == nil {
		t.Error("duplicate prompt registered")
	}
}

func TestCompletion(t *testing.T) {
	e := newEnv(t)
	var completeArgs [][2]string
	many := func(n int) func(context.Context, Session, string, string) ([]string, error) {
		return func(_ context.Context, _ Session, variable, prefix string) ([]string, error) {
			completeArgs = append(completeArgs, [2]string{variable, prefix})
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("%s%03d", prefix, i)
			}
			return out, nil
		}
	}
	mustAdd := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(e.s.AddPrompt(greetPrompt(nil)))
	mustAdd(e.s.AddPrompt(plainPrompt("no.complete", func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	})))
	tmpl := func(uri string, c func(context.Context, Session, string, string) ([]string, error)) ResourceTemplate {
		return ResourceTemplate{
			ResourceTemplate: protocol.ResourceTemplate{URITemplate: uri, Name: uri},
			Read: func(context.Context, Session, string, map[string]string) ([]protocol.ResourceContents, error) {
				return nil, nil
			},
			Complete: c,
		}
	}
	mustAdd(e.s.AddResourceTemplate(tmpl("test://many/{id}", many(150))))
	mustAdd(e.s.AddResourceTemplate(tmpl("test://exact/{id}", many(100))))
	mustAdd(e.s.AddResourceTemplate(tmpl("test://few/{id}", many(3))))
	mustAdd(e.s.AddResourceTemplate(tmpl("test://none/{id}", nil)))
	mustAdd(e.s.AddResourceTemplate(tmpl("test://failing/{id}", func(context.Context, Session, string, string) ([]string, error) {
		return nil, errors.New("index offline")
	})))

	type completion struct {
		Values  []string `json:"values"`
		Total   *int     `json:"total"`
		HasMore *bool    `json:"hasMore"`
	}
	complete := func(t *testing.T, params string) completion {
		t.Helper()
		raw := e.ok(t, protocol.MethodCompletionComplete, params)
		c := unmarshal[struct {
			Completion completion `json:"completion"`
		}](t, raw).Completion
		if c.Values == nil {
			t.Fatalf("values missing or null in %s", raw)
		}
		return c
	}

	t.Run("ref/prompt", func(t *testing.T) {
		c := complete(t, `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}`)
		if !slices.Equal(c.Values, []string{"alice", "albert"}) || c.Total != nil || c.HasMore != nil {
			t.Fatalf("completion = %+v", c)
		}
	})
	t.Run("ref/prompt without Complete", func(t *testing.T) {
		if c := complete(t, `{"ref":{"type":"ref/prompt","name":"no.complete"},"argument":{"name":"x","value":""}}`); len(c.Values) != 0 {
			t.Fatalf("completion = %+v", c)
		}
	})
	t.Run("ref/resource", func(t *testing.T) {
		completeArgs = nil
		c := complete(t, `{"ref":{"type":"ref/resource","uri":"test://few/{id}"},"argument":{"name":"id","value":"k"}}`)
		if !slices.Equal(c.Values, []string{"k000", "k001", "k002"}) || c.Total != nil || c.HasMore != nil {
			t.Fatalf("completion = %+v", c)
		}
		if len(completeArgs) != 1 || completeArgs[0] != [2]string{"id", "k"} {
			t.Errorf("Complete called with %v", completeArgs)
		}
	})
	t.Run("ref/resource without Complete", func(t *testing.T) {
		if c := complete(t, `{"ref":{"type":"ref/resource","uri":"test://none/{id}"},"argument":{"name":"id","value":""}}`); len(c.Values) != 0 {
			t.Fatalf("completion = %+v", c)
		}
	})
	t.Run("more than 100 values", func(t *testing.T) {
		c := complete(t, `{"ref":{"type":"ref/resource","uri":"test://many/{id}"},"argument":{"name":"id","value":"v"}}`)
		if len(c.Values) != 100 || c.Values[0] != "v000" || c.Values[99] != "v099" {
			t.Fatalf("%d values, first %q", len(c.Values), c.Values[0])
		}
		if c.Total == nil || *c.Total != 150 || c.HasMore == nil || !*c.HasMore {
			t.Fatalf("total %v hasMore %v", c.Total, c.HasMore)
		}
	})
	t.Run("exactly 100 values", func(t *testing.T) {
		c := complete(t, `{"ref":{"type":"ref/resource","uri":"test://exact/{id}"},"argument":{"name":"id","value":""}}`)
		if len(c.Values) != 100 || c.Total != nil || c.HasMore != nil {
			t.Fatalf("%d values, total %v, hasMore %v", len(c.Values), c.Total, c.HasMore)
		}
	})
	t.Run("Complete failure is an internal error", func(t *testing.T) {
		_, _, err := e.handle(protocol.MethodCompletionComplete, `{"ref":{"type":"ref/resource","uri":"test://failing/{id}"},"argument":{"name":"id","value":""}}`)
		var perr *protocol.Error
		if err == nil || errors.As(err, &perr) || !strings.Contains(err.Error(), "index offline") {
			t.Fatalf("error = %v", err)
		}
	})
	for name, params := range map[string]string{
		"unknown ref type":        `{"ref":{"type":"ref/tool","name":"greet"},"argument":{"name":"n","value":""}}`,
		"missing ref":             `{"argument":{"name":"n","value":""}}`,
		"absent params":           ``,
		"unknown prompt":          `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"n","value":""}}`,
		"unknown template":        `{"ref":{"type":"ref/resource","uri":"test://nope/{id}"},"argument":{"name":"id","value":""}}`,
		"concrete URI as ref":     `{"ref":{"type":"ref/resource","uri":"test://few/1"},"argument":{"name":"id","value":""}}`,
		"ref of the wrong type":   `{"ref":"ref/prompt","argument":{"name":"n","value":""}}`,
		"value of the wrong type": `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			e.fails(t, protocol.CodeInvalidParams, protocol.MethodCompletionComplete, params)
		})
	}
}
