package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// surfacePeer is a go-sdk server with prompts, resources, a template,
// completions and subscriptions, counting the requests it gets by method.
type surfacePeer struct {
	srv     *httptest.Server
	server  *mcp.Server
	mu      sync.Mutex
	methods map[string]int
	// subscribed holds the URIs subscribed on it now.
	subscribed sync.Map
}

// newSurfacePeer starts a surface peer whose server has opts (nil: one
// with completions and subscriptions) and the items add adds.
func newSurfacePeer(t *testing.T, name string, opts *mcp.ServerOptions, add func(s *mcp.Server)) *surfacePeer {
	t.Helper()
	p := &surfacePeer{methods: map[string]int{}}
	if opts == nil {
		opts = &mcp.ServerOptions{
			CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				var values []string
				for i := range 3 {
					values = append(values, fmt.Sprintf("%s-%s-%d", req.Params.Argument.Name, req.Params.Argument.Value, i))
				}
				if req.Params.Argument.Value == "many" {
					values = make([]string, 150)
					for i := range values {
						values[i] = fmt.Sprint(i)
					}
				}
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
			},
			SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
				p.subscribed.Store(req.Params.URI, true)
				return nil
			},
			UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
				p.subscribed.Delete(req.Params.URI)
				return nil
			},
		}
	}
	p.server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0"}, opts)
	if add != nil {
		add(p.server)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		p.mu.Lock()
		p.methods[msg.Method]++
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		for ss := range p.server.Sessions() {
			_ = ss.Close()
		}
	})
	return p
}

func (p *surfacePeer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.methods[method]
}

// fullSurface adds two prompts (one with arguments), three resources,
// one in a reserved scheme, and a template.
func fullSurface(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greeting", Description: "Greets someone.",
		Arguments: []*mcp.PromptArgument{{Name: "who", Description: "whom to greet", Required: true}, {Name: "tone"}},
		Meta:      mcp.Meta{"x.example/kind": "demo"}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["who"] + " " + req.Params.Arguments["tone"]}},
				{Role: "assistant", Content: &mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "plain"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "plain"}}}}, nil
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if strings.HasSuffix(req.Params.URI, ".bin") {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}}}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "content of " + req.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain", Size: 20, Annotations: &mcp.Annotations{Priority: 0.5}}, read)
	s.AddResource(&mcp.Resource{URI: "file:///data.bin", Name: "data"}, read)
	s.AddResource(&mcp.Resource{URI: "memory://default/plan", Name: "shadow"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs", Description: "a day's log"}, read)
}

func directClient(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
		Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The prompts, resources and templates of a server are discovered with
// its tools, namespaced (prompts) or kept as written (URIs); what the
// manager gets for prompts/get, resources/read and completion/complete
// is what a direct client of the server gets.
func TestSurfaceDiscoveredAndForwarded(t *testing.T) {
	p := newSurfacePeer(t, "up", nil, fullSurface)
	m := testManager(t, Options{Declared: []Config{cfg("up", p.srv.URL)}, ReservedSchemes: []string{"MEMORY"}})
	start(t, m)
	st := waitState(t, m, "up", StateConnected)
	if st.PromptCount != 2 || st.ResourceCount != 2 || st.ResourceTemplateCount != 1 {
		t.Fatalf("counts: %d prompts, %d resources, %d templates; want 2, 2, 1", st.PromptCount, st.ResourceCount, st.ResourceTemplateCount)
	}
	if len(st.SurfaceProblems) != 1 || st.SurfaceProblems[0].Kind != "resource" || st.SurfaceProblems[0].Name != "memory://default/plan" ||
		!strings.Contains(st.SurfaceProblems[0].Reason, "memory: is a scheme of the gateway's own resources") {
		t.Fatalf("surface problems = %+v", st.SurfaceProblems)
	}
	direct := directClient(t, p.srv.URL)
	ctx := ctxT(t)

	sf := m.Surface()
	var names []string
	for _, pr := range sf.Prompts {
		names = append(names, pr.Canonical+"="+pr.Name)
	}
	if strings.Join(names, " ") != "up.greet=greet up.plain=plain" {
		t.Fatalf("prompts = %v", names)
	}
	lp, err := direct.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, pr := range lp.Prompts {
		if got, want := string(sf.Prompts[i].Listed), jsonOf(t, pr); got != want {
			t.Errorf("prompt %s listed as %s, the server lists %s", pr.Name, got, want)
		}
	}
	var uris []string
	for _, r := range sf.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, " ") != "file:///data.bin file:///notes.txt" {
		t.Fatalf("resources = %v", uris)
	}
	lr, err := direct.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lr.Resources {
		i := slices.IndexFunc(sf.Resources, func(x Resource) bool { return x.URI == r.URI })
		if i >= 0 && string(sf.Resources[i].Listed) != jsonOf(t, r) {
			t.Errorf("resource %s listed as %s, the server lists %s", r.URI, sf.Resources[i].Listed, jsonOf(t, r))
		}
	}
	if len(sf.Templates) != 1 || sf.Templates[0].URITemplate != "file:///logs/{day}" ||
		!sf.Templates[0].Matches("file:///logs/monday") || sf.Templates[0].Matches("file:///other/monday") {
		t.Fatalf("templates = %+v", sf.Templates)
	}

	got, err := m.GetPrompt(ctx, "up", "greet", map[string]string{"who": "Ada", "tone": "warmly"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada", "tone": "warmly"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != jsonOf(t, want) || !strings.Contains(string(got), "Say hello to Ada warmly") {
		t.Errorf("prompts/get = %s, direct %s", got, jsonOf(t, want))
	}
	for _, uri := range []string{"file:///notes.txt", "file:///data.bin", "file:///logs/monday"} {
		got, err := m.ReadResource(ctx, "up", uri)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		want, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != jsonOf(t, want) {
			t.Errorf("read %s = %s, direct %s", uri, got, jsonOf(t, want))
		}
	}
	for _, ref := range []CompletionRef{{Prompt: "greet"}, {URI: "file:///logs/{day}"}} {
		got, err := m.Complete(ctx, "up", ref, "who", "A", map[string]string{"tone": "x"})
		if err != nil {
			t.Fatal(err)
		}
		dref := &mcp.CompleteReference{Type: "ref/prompt", Name: ref.Prompt}
		if ref.URI != "" {
			dref = &mcp.CompleteReference{Type: "ref/resource", URI: ref.URI}
		}
		want, err := direct.Complete(ctx, &mcp.CompleteParams{Ref: dref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "A"},
			Context: &mcp.CompleteContext{Arguments: map[string]string{"tone": "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != jsonOf(t, want) {
			t.Errorf("complete %+v = %s, direct %s", ref, got, jsonOf(t, want))
		}
	}
	// More than the spec's 100 values are cut, and say so.
	got, err = m.Complete(ctx, "up", CompletionRef{Prompt: "greet"}, "who", "many", nil)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Completion struct {
			Values  []string
			Total   int
			HasMore bool
		}
	}
	if err := json.Unmarshal(got, &c); err != nil || len(c.Completion.Values) != 100 || c.Completion.Total != 150 || !c.Completion.HasMore {
		t.Fatalf("150 values completed as %s", got)
	}

	// The server's own errors are its answer, passed on; a prompt it
	// does not list is not asked for.
	_, err = m.ReadResource(ctx, "up", "file:///missing")
	_, derr := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///missing"})
	var wire *jsonrpc.Error
	if re, ok := AsRemoteError(err); !ok || !errors.As(derr, &wire) || re.Code != wire.Code || re.Message != wire.Message {
		t.Fatalf("read of an unknown URI: %v; the server answers %v", err, derr)
	}
	before := p.count("prompts/get")
	if _, err := m.GetPrompt(ctx, "up", "nope", nil); !errors.Is(err, ErrNotFound) || p.count("prompts/get") != before {
		t.Fatalf("unknown prompt: %v (%d requests)", err, p.count("prompts/get")-before)
	}
}

// A server without completions is not asked; one without subscriptions
// refuses them.
func TestSurfaceUnsupported(t *testing.T) {
	p := newSurfacePeer(t, "bare", &mcp.ServerOptions{}, fullSurface)
	m := testManager(t, Options{Declared: []Config{cfg("bare", p.srv.URL)}})
	start(t, m)
	waitState(t, m, "bare", StateConnected)
	got, err := m.Complete(ctxT(t), "bare", CompletionRef{Prompt: "greet"}, "who", "A", nil)
	if err != nil || string(got) != `{"completion":{"values":[]}}` || p.count("completion/complete") != 0 {
		t.Fatalf("complete = %s, %v, %d requests", got, err, p.count("completion/complete"))
	}
	if err := m.Subscribe(ctxT(t), "bare", "file:///notes.txt", "s1"); !errors.Is(err, ErrUnsupported) || p.count("resources/subscribe") != 0 {
		t.Fatalf("subscribe = %v", err)
	}
}

// Two servers listing one URI (or one URI template): the server whose id
// sorts first offers it, the other's status names the conflict; when
// the first goes, the other's is offered.
func TestSurfaceURIConflict(t *testing.T) {
	shared := func(text string) func(s *mcp.Server) {
		return func(s *mcp.Server) {
			read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
			}
			s.AddResource(&mcp.Resource{URI: "file:///shared", Name: text}, read)
			s.AddResource(&mcp.Resource{URI: "file:///" + text, Name: text}, read)
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "db://{table}", Name: text}, read)
		}
	}
	pa, pb := newSurfacePeer(t, "a", nil, shared("from-a")), newSurfacePeer(t, "b", nil, shared("from-b"))
	var resourcesChanged atomic.Int64
	// b connects first: the order of connection does not matter.
	m := testManager(t, Options{Declared: []Config{cfg("zeta", pb.srv.URL)}, OnResourcesChanged: func() { resourcesChanged.Add(1) }})
	start(t, m)
	waitState(t, m, "zeta", StateConnected)
	if _, err := m.Create(ctxT(t), cfg("alpha", pa.srv.URL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, "alpha", StateConnected)
	owners := func() string {
		var out []string
		sf := m.Surface()
		for _, r := range sf.Resources {
			out = append(out, r.URI+"@"+r.Server)
		}
		for _, tm := range sf.Templates {
			out = append(out, tm.URITemplate+"@"+tm.Server)
		}
		return strings.Join(out, " ")
	}
	if got := owners(); got != "file:///from-a@alpha file:///shared@alpha file:///from-b@zeta db://{table}@alpha" {
		t.Fatalf("offered: %s", got)
	}
	st := status(t, m, "zeta")
	want := []ResourceConflict{{Kind: "resource", URI: "file:///shared", OfferedBy: "alpha"}, {Kind: "resourceTemplate", URI: "db://{table}", OfferedBy: "alpha"}}
	if !slices.Equal(st.ResourceConflicts, want) || st.ResourceCount != 2 {
		t.Fatalf("zeta's conflicts = %+v (%d resources)", st.ResourceConflicts, st.ResourceCount)
	}
	if c := status(t, m, "alpha").ResourceConflicts; len(c) != 0 {
		t.Fatalf("alpha's conflicts = %+v", c)
	}
	got, err := m.ReadResource(ctxT(t), "alpha", "file:///shared")
	if err != nil || !strings.Contains(string(got), "from-a") {
		t.Fatalf("read = %s, %v", got, err)
	}

	if err := m.Delete(ctxT(t), "alpha"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "zeta to offer the shared URI", func() bool {
		return owners() == "file:///from-b@zeta file:///shared@zeta db://{table}@zeta"
	})
	if c := status(t, m, "zeta").ResourceConflicts; len(c) != 0 {
		t.Fatalf("zeta's conflicts after alpha left = %+v", c)
	}
	waitFor(t, "resources announced", func() bool { return resourcesChanged.Load() > 0 })
}

// Lists over their bounds are left out whole and reported; the server's
// tools and its other lists stay in service.
func TestSurfaceBounds(t *testing.T) {
	p := newSurfacePeer(t, "big", nil, func(s *mcp.Server) {
		fullSurface(s)
		for i := range 5 {
			s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("extra%d", i)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		}
		long := "file:///" + strings.Repeat("x", MaxURIBytes)
		s.AddResource(&mcp.Resource{URI: long, Name: "long"}, nil)
		s.AddResource(&mcp.Resource{URI: "file:///padding", Name: "padding", Description: strings.Repeat("p", 4000)}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "t", Description: "a tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	})
	m := testManager(t, Options{Declared: []Config{cfg("big", p.srv.URL)}, MaxPromptsPerServer: 6, MaxToolListBytes: 6000})
	start(t, m)
	st := waitState(t, m, "big", StateConnected)
	if st.ToolCount != 1 || st.PromptCount != 0 || st.ResourceCount != 0 || st.ResourceTemplateCount != 1 {
		t.Fatalf("counts: %d tools, %d prompts, %d resources, %d templates", st.ToolCount, st.PromptCount, st.ResourceCount, st.ResourceTemplateCount)
	}
	reasons := map[string]string{}
	for _, pr := range st.SurfaceProblems {
		reasons[pr.Kind] = pr.Reason
	}
	if !strings.Contains(reasons["prompt"], "more than 6 prompts (federation.maxPromptsPerUpstream)") ||
		!strings.Contains(reasons["resource"], "larger than 6000 bytes (federation.maxToolListBytes)") {
		t.Fatalf("problems = %+v", st.SurfaceProblems)
	}
	if sf := m.Surface(); len(sf.Prompts) != 0 || len(sf.Resources) != 0 || len(sf.Templates) != 1 || len(m.Tools()) != 1 {
		t.Fatalf("surface = %+v", sf)
	}

	// Within the bounds, the long URI alone is left out.
	m2 := testManager(t, Options{Declared: []Config{cfg("big", p.srv.URL)}})
	start(t, m2)
	st = waitState(t, m2, "big", StateConnected)
	if st.PromptCount != 7 || st.ResourceCount != 4 || len(st.SurfaceProblems) != 1 ||
		!strings.Contains(st.SurfaceProblems[0].Reason, fmt.Sprintf("more than the %d one may have", MaxURIBytes)) {
		t.Fatalf("%d prompts, %d resources, problems %+v", st.PromptCount, st.ResourceCount, st.SurfaceProblems)
	}
}

// A prompt added upstream is announced as a prompt change, and only
// that: a tool added is a tool change, and a re-list that finds nothing
// new announces nothing.
func TestSurfaceListChanged(t *testing.T) {
	p := newSurfacePeer(t, "up", nil, fullSurface)
	var tools, prompts, resources atomic.Int64
	m := testManager(t, Options{Declared: []Config{cfg("up", p.srv.URL)},
		OnToolsChanged:     func() { tools.Add(1) },
		OnPromptsChanged:   func() { prompts.Add(1) },
		OnResourcesChanged: func() { resources.Add(1) },
	})
	start(t, m)
	waitState(t, m, "up", StateConnected)
	waitFor(t, "the first announcement", func() bool { return prompts.Load() == 1 && resources.Load() == 1 })
	tools.Store(0)

	p.server.AddPrompt(&mcp.Prompt{Name: "added"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	waitFor(t, "the new prompt", func() bool { return prompts.Load() == 2 })
	mcp.AddTool(p.server, &mcp.Tool{Name: "new", Description: "new"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	waitFor(t, "the new tool", func() bool { return tools.Load() == 1 })
	// A discovery that finds the same lists changes nothing.
	if _, err := m.Refresh(ctxT(t), "up"); err != nil {
		t.Fatal(err)
	}
	lists := p.count("prompts/list")
	if _, err := m.Refresh(ctxT(t), "up"); err != nil {
		t.Fatal(err)
	}
	if p.count("prompts/list") == lists {
		t.Fatal("refresh did not list the prompts again")
	}
	mcp.AddTool(p.server, &mcp.Tool{Name: "fence", Description: "fence"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	waitFor(t, "the fence tool", func() bool { return tools.Load() == 2 })
	if prompts.Load() != 2 || resources.Load() != 1 {
		t.Fatalf("announced: %d prompt changes, %d resource changes; want 2 and 1", prompts.Load(), resources.Load())
	}
}

// Subscriptions: the first subscriber of a URI subscribes upstream, the
// last one unsubscribes; the server's updates reach the subscribers of
// that URI only; a new session subscribes again.
func TestSurfaceSubscriptions(t *testing.T) {
	p := newSurfacePeer(t, "up", nil, fullSurface)
	type update struct {
		server, uri string
		subscribers []string
	}
	updates := make(chan update, 16)
	m := testManager(t, Options{Declared: []Config{cfg("up", p.srv.URL)},
		OnResourceUpdated: func(server, uri string, subscribers []string) { updates <- update{server, uri, subscribers} },
		reconnectDelay:    func(int) time.Duration { return time.Millisecond }})
	start(t, m)
	waitState(t, m, "up", StateConnected)
	ctx := ctxT(t)
	const notes, day = "file:///notes.txt", "file:///logs/monday"
	for _, sub := range []struct{ uri, who string }{{notes, "s1"}, {notes, "s2"}, {day, "s1"}} {
		if err := m.Subscribe(ctx, "up", sub.uri, sub.who); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.count("resources/subscribe"); n != 2 {
		t.Fatalf("%d resources/subscribe sent, want one per URI", n)
	}
	next := func() update {
		t.Helper()
		select {
		case u := <-updates:
			return u
		case <-ctx.Done():
			t.Fatal("no update relayed")
		}
		return update{}
	}
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///data.bin"}); err != nil {
		t.Fatal(err)
	}
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: notes}); err != nil {
		t.Fatal(err)
	}
	// In order: nobody holds data.bin, so the first update relayed is
	// the notes'.
	if u := next(); u.server != "up" || u.uri != notes || strings.Join(u.subscribers, ",") != "s1,s2" {
		t.Fatalf("relayed %+v", u)
	}

	m.Unsubscribe(ctx, "up", notes, "s1")
	if p.count("resources/unsubscribe") != 0 {
		t.Fatal("unsubscribed while s2 still holds the URI")
	}
	m.Unsubscribe(ctx, "up", notes, "s2")
	if _, held := p.subscribed.Load(notes); held || p.count("resources/unsubscribe") != 1 {
		t.Fatalf("the last subscriber left; the server still holds the URI (%d unsubscribes)", p.count("resources/unsubscribe"))
	}
	subs := m.Subscriptions()
	if len(subs) != 1 || subs[0].URI != day || strings.Join(subs[0].Subscribers, ",") != "s1" {
		t.Fatalf("subscriptions = %+v", subs)
	}

	// The server ends the session: the next one subscribes again.
	for ss := range p.server.Sessions() {
		_ = ss.Close()
	}
	p.subscribed.Delete(day)
	waitFor(t, "a new session subscribed again", func() bool {
		_, ok := p.subscribed.Load(day)
		return ok
	})
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: notes}); err != nil {
		t.Fatal(err)
	}
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: day}); err != nil {
		t.Fatal(err)
	}
	if u := next(); u.uri != day || strings.Join(u.subscribers, ",") != "s1" {
		t.Fatalf("relayed %+v after the reconnect", u)
	}
}

// At most so many URIs of one server are subscribed; more subscribers of
// a URI held already cost nothing.
func TestSurfaceSubscriptionLimit(t *testing.T) {
	p := newSurfacePeer(t, "up", nil, fullSurface)
	m := testManager(t, Options{Declared: []Config{cfg("up", p.srv.URL)}, maxSubscriptions: 2})
	start(t, m)
	waitState(t, m, "up", StateConnected)
	ctx := ctxT(t)
	for i, uri := range []string{"file:///logs/1", "file:///logs/2", "file:///logs/2"} {
		if err := m.Subscribe(ctx, "up", uri, fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Subscribe(ctx, "up", "file:///logs/3", "s9"); !errors.Is(err, ErrSubscriptionLimit) {
		t.Fatalf("a third URI: %v, want ErrSubscriptionLimit", err)
	}
	// What the upstream holds, not how many requests reached it: a
	// session the gateway reconnects (a health check timing out on a busy
	// machine) subscribes its URIs again.
	var held []string
	p.subscribed.Range(func(k, _ any) bool { held = append(held, k.(string)); return true })
	slices.Sort(held)
	if strings.Join(held, " ") != "file:///logs/1 file:///logs/2" {
		t.Fatalf("the upstream holds %v, want the two URIs under the limit", held)
	}
	m.Unsubscribe(ctx, "up", "file:///logs/1", "s0")
	if err := m.Subscribe(ctx, "up", "file:///logs/3", "s9"); err != nil {
		t.Fatalf("after one left: %v", err)
	}
}
