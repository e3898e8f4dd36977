package main

import (
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

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// docsServer is an upstream built with the official go-sdk server: two
// prompts (one with arguments), text, binary (1 MB) and subscribable
// resources, a resource template, completions for prompt arguments and
// template variables, and a tool.
type docsServer struct {
	url string
	s   *mcp.Server
	mu  sync.Mutex
	// subs counts resources/subscribe and unsubscribe by URI.
	subs, unsubs map[string]int
}

func newDocsServer(t *testing.T, name string) *docsServer {
	t.Helper()
	d := &docsServer{subs: map[string]int{}, unsubs: map[string]int{}}
	d.s = mcp.NewServer(&mcp.Implementation{Name: name, Version: "2.0"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range []string{"monday", "tuesday", "Ada", "Alan", "warm", "dry"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			ref := req.Params.Ref.Name + req.Params.Ref.URI
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)},
				Meta: mcp.Meta{"ref": ref, "argument": req.Params.Argument.Name}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.subs[req.Params.URI]++
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.unsubs[req.Params.URI]++
			return nil
		},
	})
	d.s.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greeting", Description: "Greets someone.",
		Arguments: []*mcp.PromptArgument{{Name: "who", Title: "Who", Description: "whom to greet", Required: true}, {Name: "tone"}},
		Meta:      mcp.Meta{"io.example/audience": "all"}, Icons: []mcp.Icon{{Source: "https://example.com/greet.png", MIMEType: "image/png"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args := req.Params.Arguments
			if args["who"] == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `argument "who" is required`, Data: json.RawMessage(`{"argument":"who"}`)}
			}
			return &mcp.GetPromptResult{Description: "greets " + args["who"], Meta: mcp.Meta{"tone": args["tone"]}, Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s, %s.", args["who"], args["tone"]), Annotations: &mcp.Annotations{Priority: 1}}},
				{Role: "assistant", Content: &mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"}}},
			}}, nil
		})
	d.s.AddPrompt(&mcp.Prompt{Name: "summary", Description: "Summarises."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarise."}}}}, nil
	})
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		switch {
		case uri == "file:///data.bin":
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/octet-stream", Blob: big}}}, nil
		case uri == "file:///notes.txt", strings.HasPrefix(uri, "file:///logs/") && uri != "file:///logs/never":
			return &mcp.ReadResourceResult{Meta: mcp.Meta{"read": uri}, Contents: []*mcp.ResourceContents{
				{URI: uri, MIMEType: "text/plain", Text: "content of " + uri + " from " + name, Meta: mcp.Meta{"lines": 1}}}}, nil
		}
		return nil, mcp.ResourceNotFoundError(uri)
	}
	d.s.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", Title: "Notes", MIMEType: "text/plain", Size: 24,
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.7}, Meta: mcp.Meta{"io.example/owner": "docs"}}, read)
	d.s.AddResource(&mcp.Resource{URI: "file:///data.bin", Name: "data", MIMEType: "application/octet-stream", Size: int64(len(big))}, read)
	d.s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs", Description: "A day's log.", MIMEType: "text/plain"}, read)
	mcp.AddTool(d.s, &mcp.Tool{Name: "noop", Description: "Does nothing."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return d.s }, nil))
	t.Cleanup(srv.Close)
	d.url = srv.URL
	return d
}

func (d *docsServer) subscriptions(uri string) (subs, unsubs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.subs[uri], d.unsubs[uri]
}

// watcher is a client of the gateway that counts list_changed
// notifications by kind and collects resources/updated URIs.
type watcher struct {
	cs                       *mcp.ClientSession
	tools, prompts, resource atomic.Int64
	updated                  chan string
}

func watch(t *testing.T, url string) *watcher {
	t.Helper()
	return watchIn(t, url, legacyEra) // it subscribes and hears list changes
}

// watchIn is watch in the era era: a modern client's Subscribe opens a
// listen stream.
func watchIn(t *testing.T, url string, era *mcp.ClientSessionOptions) *watcher {
	t.Helper()
	w := &watcher{updated: make(chan string, 16)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { w.tools.Add(1) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { w.prompts.Add(1) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { w.resource.Add(1) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			w.updated <- req.Params.URI
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, era)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	w.cs = cs
	return w
}

func (w *watcher) nextUpdate(t *testing.T) string {
	t.Helper()
	select {
	case uri := <-w.updated:
		return uri
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated within 10s")
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// promptNames lists the prompt names the session is offered.
func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		names = append(names, p.Name)
	}
	return names
}

// TestUpstreamSurface: an upstream's prompts, resources, resource
// template and completions reach a go-sdk client through the gateway
// exactly as a direct go-sdk client of the upstream sees them, prompt
// names namespaced; initialize advertises them; a subscription through
// the gateway is held upstream once for its subscribers and relays the
// upstream's updates; prompts/list_changed and resources/list_changed
// arrive when the upstream's lists change, and only then.
func TestUpstreamSurface(t *testing.T) {
	d := newDocsServer(t, "docs")
	gw, url := federate(t, []upstream.Config{{ID: "docs", URL: d.url}}, "docs_noop")
	waitFor(t, func() bool { return slices.Contains(promptNames(t, gw), "docs_greet") })
	direct := connect(t, d.url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	caps := gw.InitializeResult().Capabilities
	if caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil ||
		caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged {
		t.Fatalf("initialize advertises %s; want prompts, completions and resources with subscribe and listChanged", mustJSON(t, caps))
	}

	t.Run("prompts", func(t *testing.T) {
		want, err := direct.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gw.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Prompts) != len(want.Prompts) {
			t.Fatalf("gateway lists %d prompts, the upstream %d", len(got.Prompts), len(want.Prompts))
		}
		for _, p := range want.Prompts {
			i := slices.IndexFunc(got.Prompts, func(g *mcp.Prompt) bool { return g.Name == "docs_"+p.Name })
			if i < 0 {
				t.Fatalf("prompt %s not listed as docs_%s", p.Name, p.Name)
			}
			g := *got.Prompts[i]
			g.Name = p.Name
			if mustJSON(t, g) != mustJSON(t, p) {
				t.Errorf("prompt %s:\ngateway %s\ndirect  %s", p.Name, mustJSON(t, g), mustJSON(t, p))
			}
		}
		args := map[string]string{"who": "Ada", "tone": "warmly"}
		for _, name := range []string{"docs_greet", "docs.greet"} {
			g, err := gw.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("prompts/get %s: %v", name, err)
			}
			w, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if mustJSON(t, g) != mustJSON(t, w) {
				t.Errorf("prompts/get %s:\ngateway %s\ndirect  %s", name, mustJSON(t, g), mustJSON(t, w))
			}
		}
		// The upstream's own refusal (a required argument missing) is
		// passed on as it answered it.
		_, gerr := gw.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs_greet"})
		_, derr := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
		if gerr == nil || derr == nil || gerr.Error() != derr.Error() {
			t.Errorf("missing argument: gateway %v, direct %v", gerr, derr)
		}
	})

	t.Run("resources", func(t *testing.T) {
		// The server's own resources come first: the entities (newest
		// first), then runtime://info, then the upstream's.
		mustSucceed(t, call(t, gw, "memory_store", map[string]any{"key": "k", "value": 1}), "memory_store")
		var listed []*mcp.Resource
		for r, err := range gw.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, r)
		}
		var order []string
		for _, r := range listed {
			order = append(order, r.URI)
		}
		if want := []string{"memory://default/k", "runtime://info", "file:///data.bin", "file:///notes.txt"}; !slices.Equal(order, want) {
			t.Fatalf("resources/list = %v, want %v", order, want)
		}
		want, err := direct.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(want.Resources, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
		if g, w := mustJSON(t, listed[2:]), mustJSON(t, want.Resources); g != w {
			t.Errorf("upstream resources:\ngateway %s\ndirect  %s", g, w)
		}
		gt, err := gw.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wt, err := direct.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(gt.ResourceTemplates, func(x *mcp.ResourceTemplate) bool { return x.URITemplate == "file:///logs/{day}" })
		if i < 0 || mustJSON(t, gt.ResourceTemplates[i]) != mustJSON(t, wt.ResourceTemplates[0]) {
			t.Errorf("templates: gateway %s, direct %s", mustJSON(t, gt.ResourceTemplates), mustJSON(t, wt.ResourceTemplates))
		}
		for _, uri := range []string{"file:///notes.txt", "file:///data.bin", "file:///logs/monday"} {
			g, err := gw.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			w, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatal(err)
			}
			if gj, wj := mustJSON(t, g), mustJSON(t, w); gj != wj {
				t.Errorf("read %s: gateway %d bytes, direct %d bytes, differ:\n%.300s\n%.300s", uri, len(gj), len(wj), gj, wj)
			}
		}
		// A URI the upstream's template matches but the upstream does
		// not know: its answer, passed on; a URI nobody offers: the
		// gateway's -32002.
		_, gerr := gw.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///logs/never"})
		_, derr := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///logs/never"})
		if gerr == nil || derr == nil || gerr.Error() != derr.Error() {
			t.Errorf("unknown log: gateway %v, direct %v", gerr, derr)
		}
		var wire *jsonrpc.Error
		if _, err := gw.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///elsewhere"}); !errors.As(err, &wire) || wire.Code != protocol.CodeResourceNotFound {
			t.Errorf("read of a URI nobody offers: %v, want -32002", err)
		}
	})

	t.Run("completions", func(t *testing.T) {
		for _, tc := range []struct {
			gw, direct *mcp.CompleteReference
			arg, value string
		}{
			{&mcp.CompleteReference{Type: "ref/prompt", Name: "docs_greet"}, &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "who", "A"},
			{&mcp.CompleteReference{Type: "ref/resource", URI: "file:///logs/{day}"}, &mcp.CompleteReference{Type: "ref/resource", URI: "file:///logs/{day}"}, "day", "t"},
		} {
			c := &mcp.CompleteContext{Arguments: map[string]string{"tone": "warm"}}
			g, err := gw.Complete(ctx, &mcp.CompleteParams{Ref: tc.gw, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value}, Context: c})
			if err != nil {
				t.Fatalf("complete %+v: %v", tc.gw, err)
			}
			w, err := direct.Complete(ctx, &mcp.CompleteParams{Ref: tc.direct, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value}, Context: c})
			if err != nil {
				t.Fatal(err)
			}
			if mustJSON(t, g) != mustJSON(t, w) || len(g.Completion.Values) == 0 {
				t.Errorf("complete %+v:\ngateway %s\ndirect  %s", tc.gw, mustJSON(t, g), mustJSON(t, w))
			}
		}
	})

	t.Run("subscriptions", func(t *testing.T) {
		const uri = "file:///notes.txt"
		a, b := watch(t, url), watch(t, url)
		for _, w := range []*watcher{a, b} {
			if err := w.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
		}
		if subs, _ := d.subscriptions(uri); subs != 1 {
			t.Fatalf("the upstream got %d resources/subscribe for two subscribers, want 1", subs)
		}
		if err := d.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		for _, w := range []*watcher{a, b} {
			if got := w.nextUpdate(t); got != uri {
				t.Fatalf("updated %s, want %s", got, uri)
			}
		}
		if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if _, unsubs := d.subscriptions(uri); unsubs != 0 {
			t.Fatal("unsubscribed upstream while a subscriber remains")
		}
		if err := d.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if got := b.nextUpdate(t); got != uri {
			t.Fatalf("updated %s, want %s", got, uri)
		}
		if err := b.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if _, unsubs := d.subscriptions(uri); unsubs != 1 {
			t.Fatalf("the last subscriber left; the upstream got %d resources/unsubscribe, want 1", unsubs)
		}
		select {
		case got := <-a.updated:
			t.Fatalf("a got %s after unsubscribing", got)
		default:
		}
	})

	t.Run("listen subscriptions", func(t *testing.T) {
		// A listen's URI that an upstream offers is subscribed there
		// before the acknowledgement, and dropped when the listen ends
		// (docs/adr/0054-listen-across-replicas.md).
		const uri = "file:///logs/monday"
		m := watchIn(t, url, modernEra)
		if err := m.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe (a listen): %v", err)
		}
		if subs, _ := d.subscriptions(uri); subs != 1 {
			t.Fatalf("the upstream got %d resources/subscribe for a listen, want 1", subs)
		}
		if err := d.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if got := m.nextUpdate(t); got != uri {
			t.Fatalf("the listen heard %s, want %s", got, uri)
		}
		if err := m.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { _, unsubs := d.subscriptions(uri); return unsubs == 1 })
	})

	t.Run("list_changed", func(t *testing.T) {
		w := watch(t, url)
		noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		}
		// A tool added: tools/list_changed, not prompts' or resources'.
		mcp.AddTool(d.s, &mcp.Tool{Name: "added", Description: "Added."}, noop)
		waitFor(t, func() bool { return w.tools.Load() == 1 })
		// A prompt added: prompts/list_changed only.
		d.s.AddPrompt(&mcp.Prompt{Name: "added", Description: "Added."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		waitFor(t, func() bool { return w.prompts.Load() == 1 })
		if !slices.Contains(promptNames(t, w.cs), "docs_added") {
			t.Fatal("the added prompt is not listed")
		}
		// A resource added: resources/list_changed, after which every
		// earlier notification has arrived (one stream, in order).
		d.s.AddResource(&mcp.Resource{URI: "file:///added.txt", Name: "added"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		waitFor(t, func() bool { return w.resource.Load() == 1 })
		if w.tools.Load() != 1 || w.prompts.Load() != 1 {
			t.Fatalf("list_changed: %d tools, %d prompts, %d resources; want one of each", w.tools.Load(), w.prompts.Load(), w.resource.Load())
		}
	})
}

// A client session that ends without unsubscribing leaves the
// subscriptions it held upstream to the sweeper, which drops them once
// the transport no longer has it subscribed.
func TestUpstreamSurfaceSweepsEndedSessions(t *testing.T) {
	d := newDocsServer(t, "docs")
	cfg := config.Default()
	cfg.Federation.HealthIntervalMs = 1000 // the sweeper's round
	cfg.Upstreams = []upstream.Config{{ID: "docs", URL: d.url}}
	url, _ := runServer(t, cfg, io.Discard)
	gw := connect(t, url)
	waitFor(t, func() bool { return slices.Contains(promptNames(t, gw), "docs_greet") })
	const uri = "file:///notes.txt"
	if err := gw.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if subs, _ := d.subscriptions(uri); subs != 1 {
		t.Fatalf("%d upstream subscriptions, want 1", subs)
	}
	if err := gw.Close(); err != nil { // DELETE: the session ends
		t.Fatal(err)
	}
	// Within a sweeper round or two.
	waitFor(t, func() bool { _, unsubs := d.subscriptions(uri); return unsubs == 1 })
}

// Two upstreams listing the same URIs: the one whose id sorts first
// offers them, each URI is listed once, reads go to it, and the other's
// status in the admin API names the conflicts.
func TestUpstreamSurfaceURIConflict(t *testing.T) {
	alpha, beta := newDocsServer(t, "alpha"), newDocsServer(t, "beta")
	cfg := config.Default()
	cfg.Admin.Token = "admin-secret"
	// beta is declared first: the order of declaration does not matter.
	cfg.Upstreams = []upstream.Config{{ID: "beta", URL: beta.url}, {ID: "alpha", URL: alpha.url}}
	url, _ := runServer(t, cfg, io.Discard)
	gw := connect(t, url)
	waitFor(t, func() bool {
		names := promptNames(t, gw)
		return slices.Contains(names, "alpha_greet") && slices.Contains(names, "beta_greet")
	})
	ctx := context.Background()
	var uris []string
	for r, err := range gw.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if want := []string{"runtime://info", "file:///data.bin", "file:///notes.txt"}; !slices.Equal(uris, want) {
		t.Fatalf("resources/list = %v, want %v", uris, want)
	}
	res, err := gw.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///logs/monday"})
	if err != nil || len(res.Contents) != 1 || !strings.HasSuffix(res.Contents[0].Text, "from alpha") {
		t.Fatalf("read = %s, %v; want alpha's", mustJSON(t, res), err)
	}
	code, body := adminDo(t, strings.TrimSuffix(url, "/mcp"), http.MethodGet, "/admin/upstreams/beta", "admin-secret", "")
	var st upstream.Status
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("admin status: %d %s", code, body)
	}
	want := []upstream.ResourceConflict{
		{Kind: "resource", URI: "file:///data.bin", OfferedBy: "alpha"},
		{Kind: "resource", URI: "file:///notes.txt", OfferedBy: "alpha"},
		{Kind: "resourceTemplate", URI: "file:///logs/{day}", OfferedBy: "alpha"},
	}
	if !slices.Equal(st.ResourceConflicts, want) || st.PromptCount != 2 || st.ResourceCount != 2 || st.ResourceTemplateCount != 1 {
		t.Fatalf("beta's status: %s", body)
	}
}

// initialize advertises prompts and completions, and listChanged for
// prompts and resources, whether or not an upstream offers any yet: the
// server answers prompts/list and completion/complete either way, and an
// upstream added later (admin API, another replica) brings its prompts
// with a list_changed. Without this, clients that honour the
// capabilities (the TypeScript SDK) never ask.
func TestInitializeAdvertisesPromptsAndCompletions(t *testing.T) {
	url, _ := runServer(t, config.Default(), io.Discard)
	cs := connect(t, url)
	caps := cs.InitializeResult().Capabilities
	if caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil || caps.Resources == nil || !caps.Resources.ListChanged {
		t.Fatalf("capabilities = %s", mustJSON(t, caps))
	}
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil || len(res.Prompts) != 0 {
		t.Fatalf("prompts/list = %s, %v", mustJSON(t, res), err)
	}
}
