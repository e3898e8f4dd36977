package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// fakeFederated offers prompts up_*, resources up://* and a template
// up://t/{id}, and records the requests it answers.
type fakeFederated struct {
	prompts   []protocol.Prompt
	resources []protocol.Resource
	templates []protocol.ResourceTemplate
	// refuse makes Subscribe fail.
	refuse error

	mu    sync.Mutex
	calls []string
}

func newFakeFederated(prompts, resources int) *fakeFederated {
	f := &fakeFederated{}
	for i := range prompts {
		name := fmt.Sprintf("up_p%d", i)
		f.prompts = append(f.prompts, protocol.Prompt{Name: name, Raw: json.RawMessage(fmt.Sprintf(`{"name":%q,"_meta":{"n":%d}}`, name, i))})
	}
	for i := range resources {
		uri := fmt.Sprintf("up://r%d", i)
		f.resources = append(f.resources, protocol.Resource{URI: uri, Raw: json.RawMessage(fmt.Sprintf(`{"uri":%q,"name":"r","icons":[]}`, uri))})
	}
	f.templates = []protocol.ResourceTemplate{{URITemplate: "up://t/{id}", Raw: json.RawMessage(`{"uriTemplate":"up://t/{id}","name":"t"}`)}}
	return f
}

func (f *fakeFederated) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeFederated) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeFederated) Prompts() []protocol.Prompt                     { return f.prompts }
func (f *fakeFederated) Resources() []protocol.Resource                 { return f.resources }
func (f *fakeFederated) ResourceTemplates() []protocol.ResourceTemplate { return f.templates }

func (f *fakeFederated) GetPrompt(_ context.Context, _ Session, name string, args map[string]string) (any, bool, error) {
	if !strings.HasPrefix(name, "up_") {
		return nil, false, nil
	}
	f.record("get %s %v", name, args)
	return json.RawMessage(`{"messages":[],"_meta":{"from":"up"}}`), true, nil
}

func (f *fakeFederated) owns(uri string) bool { return strings.HasPrefix(uri, "up://") }

func (f *fakeFederated) ReadResource(_ context.Context, _ Session, uri string) (any, bool, error) {
	if !f.owns(uri) {
		return nil, false, nil
	}
	f.record("read %s", uri)
	if uri == "up://gone" {
		return nil, true, protocol.Errorf(protocol.CodeResourceNotFound, "upstream: resource not found")
	}
	return json.RawMessage(`{"contents":[{"uri":"` + uri + `","blob":"AAE="}]}`), true, nil
}

func (f *fakeFederated) Complete(_ context.Context, _ Session, p *protocol.CompleteParams) (any, bool, error) {
	if !strings.HasPrefix(p.Ref.Name, "up_") && !f.owns(p.Ref.URI) {
		return nil, false, nil
	}
	f.record("complete %s%s %s=%s", p.Ref.Name, p.Ref.URI, p.Argument.Name, p.Argument.Value)
	return json.RawMessage(`{"completion":{"values":["up"]}}`), true, nil
}

func (f *fakeFederated) Subscribe(_ context.Context, s, uri string) (bool, error) {
	if !f.owns(uri) {
		return false, nil
	}
	if f.refuse != nil {
		return true, f.refuse
	}
	f.record("subscribe %s %s", s, uri)
	return true, nil
}

func (f *fakeFederated) Unsubscribe(_ context.Context, s, uri string) {
	f.record("unsubscribe %s %s", s, uri)
}

// fedEnv is an env with one own prompt (with completion), one own
// resource and template, and the fake upstreams' surface.
func fedEnv(t *testing.T, prompts, resources int) (*env, *fakeFederated) {
	t.Helper()
	e := newEnv(t, echoTool("a.b"))
	own := plainPrompt("own", func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{Description: "own"}, nil
	})
	own.Complete = func(context.Context, Session, string, string) ([]string, error) { return []string{"mine"}, nil }
	if err := e.s.AddPrompt(own); err != nil {
		t.Fatal(err)
	}
	if err := e.s.AddResource(staticResource("runtime://info", "own")); err != nil {
		t.Fatal(err)
	}
	if err := e.s.AddResourceTemplate(ResourceTemplate{ResourceTemplate: protocol.ResourceTemplate{URITemplate: "memory://{key}", Name: "memory"},
		Read: func(_ context.Context, _ Session, uri string, _ map[string]string) ([]protocol.ResourceContents, error) {
			if uri == "memory://missing" {
				return nil, ErrResourceNotFound
			}
			return []protocol.ResourceContents{{URI: uri, Text: "own"}}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	f := newFakeFederated(prompts, resources)
	e.s.SetFederated(f)
	return e, f
}

// With upstreams, initialize advertises prompts and completions, and
// listChanged for prompts and resources, even with no prompt of its own.
func TestFederatedCapabilities(t *testing.T) {
	e := newEnv(t, echoTool("a.b"))
	e.s.SetFederated(newFakeFederated(0, 0))
	caps := capabilitiesJSON(t, e.s)
	if got := string(caps["prompts"]); got != `{"listChanged":true}` {
		t.Errorf("prompts = %s", got)
	}
	if got := string(caps["completions"]); got != `{}` {
		t.Errorf("completions = %s", got)
	}
	if got := string(caps["resources"]); got != `{"subscribe":true,"listChanged":true}` {
		t.Errorf("resources = %s", got)
	}
	if got := e.s.ResourceSchemes(); len(got) != 0 {
		t.Errorf("schemes of a server without resources = %v", got)
	}
	e, _ = fedEnv(t, 0, 0)
	if got := e.s.ResourceSchemes(); strings.Join(got, ",") != "memory,runtime" {
		t.Errorf("schemes = %v", got)
	}
}

// The lists hold the server's own items first, then the upstreams' as
// they wrote them, across full pages; an upstream item with an own
// name or URI is not listed.
func TestFederatedLists(t *testing.T) {
	e, f := fedEnv(t, 3, 3)
	f.prompts = append(f.prompts, protocol.Prompt{Name: "own", Raw: json.RawMessage(`{"name":"own","description":"shadow"}`)})
	f.resources = append(f.resources, protocol.Resource{URI: "runtime://info", Raw: json.RawMessage(`{"uri":"runtime://info","name":"shadow"}`)})
	f.templates = append(f.templates, protocol.ResourceTemplate{URITemplate: "memory://{key}", Raw: json.RawMessage(`{"uriTemplate":"memory://{key}","name":"shadow"}`)})
	for _, tc := range []struct{ method, field, want string }{
		{protocol.MethodPromptsList, "prompts", `{"name":"own","description":"prompt own"} {"name":"up_p0","_meta":{"n":0}} {"name":"up_p1","_meta":{"n":1}} {"name":"up_p2","_meta":{"n":2}}`},
		{protocol.MethodResourcesList, "resources", `{"uri":"runtime://info","name":"res runtime://info","mimeType":"text/plain"} {"uri":"up://r0","name":"r","icons":[]} {"uri":"up://r1","name":"r","icons":[]} {"uri":"up://r2","name":"r","icons":[]}`},
		{protocol.MethodResourcesTemplatesList, "resourceTemplates", `{"uriTemplate":"memory://{key}","name":"memory"} {"uriTemplate":"up://t/{id}","name":"t"}`},
	} {
		items, pages := listAll(t, e, tc.method, tc.field)
		var got []string
		for _, it := range items {
			got = append(got, string(it))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s = %s\nwant %s", tc.method, strings.Join(got, " "), tc.want)
		}
		if want := (len(items) + 1) / 2; pages != want {
			t.Errorf("%s: %d pages for %d items, want %d full ones", tc.method, pages, len(items), want)
		}
	}
}

// Upstream resources come after the lister's entities, in the concrete
// part, with full pages.
func TestFederatedResourcesAfterEntities(t *testing.T) {
	e, _ := fedEnv(t, 0, 2)
	e.s.SetResourceLister(numberLister{n: 3})
	var pages []string
	for params := `{}`; ; {
		res := unmarshal[protocol.ListResourcesResult](t, e.ok(t, protocol.MethodResourcesList, params))
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		pages = append(pages, strings.Join(uris, " "))
		if res.NextCursor == "" {
			break
		}
		params = fmt.Sprintf(`{"cursor":%q}`, res.NextCursor)
	}
	if got := strings.Join(pages, "|"); got != "n://0 n://1|n://2 runtime://info|up://r0 up://r1" {
		t.Fatalf("pages %s", got)
	}
}

// Requests for the server's own prompts, resources and templates stay
// here; the rest go to the upstreams, whose answers and errors are
// passed on; what neither knows is an error of the server's.
func TestFederatedRouting(t *testing.T) {
	e, f := fedEnv(t, 1, 1)
	if got := string(e.ok(t, protocol.MethodPromptsGet, `{"name":"own"}`)); got != `{"description":"own","messages":[]}` {
		t.Errorf("own prompt = %s", got)
	}
	if got := string(e.ok(t, protocol.MethodPromptsGet, `{"name":"up_p0","arguments":{"who":"Ada"}}`)); got != `{"messages":[],"_meta":{"from":"up"}}` {
		t.Errorf("upstream prompt = %s", got)
	}
	e.fails(t, protocol.CodeInvalidParams, protocol.MethodPromptsGet, `{"name":"nobody"}`)

	if got := string(e.ok(t, protocol.MethodResourcesRead, `{"uri":"memory://k"}`)); !strings.Contains(got, `"text":"own"`) {
		t.Errorf("own template read = %s", got)
	}
	if got := string(e.ok(t, protocol.MethodResourcesRead, `{"uri":"up://t/7"}`)); got != `{"contents":[{"uri":"up://t/7","blob":"AAE="}]}` {
		t.Errorf("upstream read = %s", got)
	}
	if perr := e.fails(t, protocol.CodeResourceNotFound, protocol.MethodResourcesRead, `{"uri":"up://gone"}`); !strings.Contains(perr.Message, "upstream") {
		t.Errorf("the upstream's error was not passed on: %v", perr)
	}
	e.fails(t, protocol.CodeResourceNotFound, protocol.MethodResourcesRead, `{"uri":"memory://missing"}`)
	e.fails(t, protocol.CodeResourceNotFound, protocol.MethodResourcesRead, `{"uri":"else://x"}`)

	for _, tc := range []struct{ params, want string }{
		{`{"ref":{"type":"ref/prompt","name":"own"},"argument":{"name":"a","value":"x"}}`, `{"completion":{"values":["mine"]}}`},
		{`{"ref":{"type":"ref/prompt","name":"up_p0"},"argument":{"name":"a","value":"x"}}`, `{"completion":{"values":["up"]}}`},
		{`{"ref":{"type":"ref/resource","uri":"up://t/{id}"},"argument":{"name":"id","value":"1"}}`, `{"completion":{"values":["up"]}}`},
		{`{"ref":{"type":"ref/resource","uri":"memory://{key}"},"argument":{"name":"key","value":"1"}}`, `{"completion":{"values":[]}}`},
	} {
		if got := string(e.ok(t, protocol.MethodCompletionComplete, tc.params)); got != tc.want {
			t.Errorf("complete %s = %s, want %s", tc.params, got, tc.want)
		}
	}
	e.fails(t, protocol.CodeInvalidParams, protocol.MethodCompletionComplete, `{"ref":{"type":"ref/prompt","name":"nobody"},"argument":{"name":"a","value":""}}`)
	want := []string{"get up_p0 map[who:Ada]", "read up://t/7", "read up://gone", "complete up_p0 a=x", "complete up://t/{id} id=1"}
	if got := f.recorded(); !slices.Equal(got, want) {
		t.Errorf("forwarded %q\nwant %q", got, want)
	}
}

// An upstream's resource is subscribed upstream before the session
// holds it, and unsubscribed with it; the server's own resources and
// patterns are not the upstreams' business; a refusal upstream leaves
// the session unsubscribed, and a refusal by the session undoes the
// upstream's.
func TestFederatedSubscriptions(t *testing.T) {
	e, f := fedEnv(t, 0, 1)
	for _, uri := range []string{"up://r0", "memory://k", "stale://memory.*"} {
		e.ok(t, protocol.MethodResourcesSubscribe, fmt.Sprintf(`{"uri":%q}`, uri))
	}
	e.ok(t, protocol.MethodResourcesUnsubscribe, `{"uri":"up://r0"}`)
	subs, unsubs := e.sess.subscriptions()
	if strings.Join(subs, " ") != "up://r0 memory://k stale://memory.*" || strings.Join(unsubs, " ") != "up://r0" {
		t.Fatalf("session: subscribed %v, unsubscribed %v", subs, unsubs)
	}
	if got := f.recorded(); !slices.Equal(got, []string{"subscribe sess-1 up://r0", "unsubscribe sess-1 up://r0"}) {
		t.Fatalf("upstream: %q", got)
	}

	f.refuse = protocol.Errorf(protocol.CodeInvalidParams, "upstream up does not offer resource subscriptions")
	e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesSubscribe, `{"uri":"up://r0"}`)
	if subs, _ := e.sess.subscriptions(); len(subs) != 3 {
		t.Fatalf("a refused subscription reached the session: %v", subs)
	}

	f.refuse = nil
	e.sess.subErr = fmt.Errorf("a client session may hold at most 1024 subscriptions")
	e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesSubscribe, `{"uri":"up://t/9"}`)
	if got := f.recorded(); !slices.Equal(got[2:], []string{"subscribe sess-1 up://t/9", "unsubscribe sess-1 up://t/9"}) {
		t.Fatalf("upstream after a refusal by the session: %q", got)
	}
}
