package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func staticResource(uri, text string) Resource {
	return Resource{
		Resource: protocol.Resource{URI: uri, Name: "res " + uri, MimeType: "text/plain"},
		Read: func(context.Context, Session) ([]protocol.ResourceContents, error) {
			return []protocol.ResourceContents{{URI: uri, MimeType: "text/plain", Text: text}}, nil
		},
	}
}

// templateRead records the variables a template read was called with.
type templateRead struct {
	uri  string
	vars map[string]string
}

func recordingTemplate(uriTemplate string, got *[]templateRead) ResourceTemplate {
	return ResourceTemplate{
		ResourceTemplate: protocol.ResourceTemplate{URITemplate: uriTemplate, Name: "tmpl " + uriTemplate},
		Read: func(_ context.Context, _ Session, uri string, vars map[string]string) ([]protocol.ResourceContents, error) {
			*got = append(*got, templateRead{uri, vars})
			return []protocol.ResourceContents{{URI: uri, Text: fmt.Sprint(vars)}}, nil
		},
	}
}

func resourceEnv(t *testing.T) (*env, *[]templateRead) {
	t.Helper()
	e := newEnv(t)
	reads := &[]templateRead{}
	for _, r := range []Resource{
		staticResource("test://static/a", "alpha"),
		staticResource("test://static/b", "beta"),
		staticResource("test://static/c", "gamma"),
		{
			Resource: protocol.Resource{URI: "test://static/blob", Name: "blob"},
			Read: func(context.Context, Session) ([]protocol.ResourceContents, error) {
				return []protocol.ResourceContents{{URI: "test://static/blob", MimeType: "image/png", Blob: "iVBORw0KGgo=", IsBlob: true}}, nil
			},
		},
		{
			Resource: protocol.Resource{URI: "test://static/empty", Name: "empty"},
			Read:     func(context.Context, Session) ([]protocol.ResourceContents, error) { return nil, nil },
		},
		{
			Resource: protocol.Resource{URI: "test://static/gone", Name: "gone"},
			Read: func(context.Context, Session) ([]protocol.ResourceContents, error) {
				return nil, fmt.Errorf("lookup: %w", ErrResourceNotFound)
			},
		},
		{
			Resource: protocol.Resource{URI: "test://static/broken", Name: "broken"},
			Read: func(context.Context, Session) ([]protocol.ResourceContents, error) {
				return nil, errors.New("backend down")
			},
		},
	} {
		if err := e.s.AddResource(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tmpl := range []string{
		"test://template/{id}/data",
		"test://pair/{a}-{b}",
		"test://last/{key}",
	} {
		if err := e.s.AddResourceTemplate(recordingTemplate(tmpl, reads)); err != nil {
			t.Fatalf("AddResourceTemplate(%q): %v", tmpl, err)
		}
	}
	return e, reads
}

// listAll follows nextCursor through a list method and returns the raw pages.
func listAll(t *testing.T, e *env, method, field string) (items []json.RawMessage, pages int) {
	t.Helper()
	params := ""
	for {
		pages++
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		m := members(t, e.ok(t, method, params))
		page := unmarshal[[]json.RawMessage](t, m[field])
		if len(page) > 2 {
			t.Fatalf("%s page %d has %d items, more than PageSize 2", method, pages, len(page))
		}
		items = append(items, page...)
		next, ok := m["nextCursor"]
		if !ok {
			return items, pages
		}
		var cursor string
		if err := json.Unmarshal(next, &cursor); err != nil || cursor == "" {
			t.Fatalf("nextCursor = %s", next)
		}
		params = `{"cursor":` + string(next) + `}`
	}
}

func TestResourcesList(t *testing.T) {
	e, _ := resourceEnv(t)
	items, pages := listAll(t, e, protocol.MethodResourcesList, "resources")
	var uris []string
	for _, it := range items {
		uris = append(uris, unmarshal[protocol.Resource](t, it).URI)
	}
	// By URI, not in registration order (docs/adr/0052-list-order-and-cursors.md).
	want := []string{"test://static/a", "test://static/b", "test://static/blob", "test://static/broken", "test://static/c", "test://static/empty", "test://static/gone"}
	if !slices.Equal(uris, want) || pages != 4 {
		t.Fatalf("resources = %v in %d pages, want %v in 4", uris, pages, want)
	}

	items, pages = listAll(t, e, protocol.MethodResourcesTemplatesList, "resourceTemplates")
	var tmpls []string
	for _, it := range items {
		tmpls = append(tmpls, unmarshal[protocol.ResourceTemplate](t, it).URITemplate)
	}
	if want := []string{"test://last/{key}", "test://pair/{a}-{b}", "test://template/{id}/data"}; !slices.Equal(tmpls, want) || pages != 2 {
		t.Fatalf("templates = %v in %d pages, want %v in 2", tmpls, pages, want)
	}

	t.Run("empty lists are arrays", func(t *testing.T) {
		e := newEnv(t)
		for method, field := range map[string]string{
			protocol.MethodResourcesList:          "resources",
			protocol.MethodResourcesTemplatesList: "resourceTemplates",
			protocol.MethodPromptsList:            "prompts",
			protocol.MethodToolsList:              "tools",
		} {
			m := members(t, e.ok(t, method, ""))
			if string(m[field]) != "[]" {
				t.Errorf("%s: %s = %s, want []", method, field, m[field])
			}
		}
	})
}

func TestResourcesRead(t *testing.T) {
	e, reads := resourceEnv(t)
	t.Run("concrete", func(t *testing.T) {
		res := unmarshal[protocol.ReadResourceResult](t, e.ok(t, protocol.MethodResourcesRead, `{"uri":"test://static/b"}`))
		if len(res.Contents) != 1 || res.Contents[0].Text != "beta" || res.Contents[0].URI != "test://static/b" || res.Contents[0].IsBlob {
			t.Fatalf("contents = %+v", res.Contents)
		}
	})
	t.Run("blob", func(t *testing.T) {
		raw := e.ok(t, protocol.MethodResourcesRead, `{"uri":"test://static/blob"}`)
		if !strings.Contains(string(raw), `"blob":"iVBORw0KGgo="`) || strings.Contains(string(raw), `"text"`) {
			t.Fatalf("result = %s", raw)
		}
	})
	t.Run("nil contents is an empty array", func(t *testing.T) {
		m := members(t, e.ok(t, protocol.MethodResourcesRead, `{"uri":"test://static/empty"}`))
		if string(m["contents"]) != "[]" {
			t.Fatalf("contents = %s", m["contents"])
		}
	})

	templateCases := []struct {
		uri  string
		want map[string]string
	}{
		{"test://template/abc/data", map[string]string{"id": "abc"}},
		{"test://template/42/data", map[string]string{"id": "42"}},
		{"test://template/hello%20world/data", map[string]string{"id": "hello world"}},
		{"test://template/a%2Fb/data", map[string]string{"id": "a/b"}},
		{"test://template/%E2%9C%93/data", map[string]string{"id": "✓"}},
		{"test://pair/x-y", map[string]string{"a": "x", "b": "y"}},
		{"test://last/k%3A1", map[string]string{"key": "k:1"}},
	}
	for _, tc := range templateCases {
		t.Run("template "+tc.uri, func(t *testing.T) {
			*reads = nil
			res := unmarshal[protocol.ReadResourceResult](t, e.ok(t, protocol.MethodResourcesRead, `{"uri":"`+tc.uri+`"}`))
			if len(*reads) != 1 {
				t.Fatalf("template reads = %+v", *reads)
			}
			got := (*reads)[0]
			if got.uri != tc.uri || fmt.Sprint(got.vars) != fmt.Sprint(tc.want) {
				t.Errorf("read(%q, %v), want (%q, %v)", got.uri, got.vars, tc.uri, tc.want)
			}
			if len(res.Contents) != 1 || res.Contents[0].URI != tc.uri {
				t.Errorf("contents = %+v", res.Contents)
			}
		})
	}

	notFound := []string{
		"test://nothing",
		"test://static/a/",
		"TEST://static/a",
		"test://template//data",          // empty variable
		"test://template/abc/other",      // wrong literal
		"test://template/abc/data/extra", // trailing text
		"test://template/abc",            // missing literal
		"test://template/%zz/data",       // bad percent-encoding
		"test://last/a/b",                // last variable spans a slash
		"test://pair/x",                  // missing second variable
	}
	for _, uri := range notFound {
		t.Run("not found "+uri, func(t *testing.T) {
			*reads = nil
			perr := e.fails(t, protocol.CodeResourceNotFound, protocol.MethodResourcesRead, `{"uri":"`+uri+`"}`)
			if data := unmarshal[map[string]string](t, perr.Data); data["uri"] != uri {
				t.Errorf("data = %s, want the uri %q", perr.Data, uri)
			}
			if !strings.Contains(perr.Message, uri) {
				t.Errorf("message %q does not name the uri", perr.Message)
			}
			if len(*reads) != 0 {
				t.Errorf("a template was read: %+v", *reads)
			}
		})
	}
	t.Run("reader says not found", func(t *testing.T) {
		e.fails(t, protocol.CodeResourceNotFound, protocol.MethodResourcesRead, `{"uri":"test://static/gone"}`)
	})
	t.Run("reader fails", func(t *testing.T) {
		_, res, err := e.handle(protocol.MethodResourcesRead, `{"uri":"test://static/broken"}`)
		var perr *protocol.Error
		if err == nil || errors.As(err, &perr) || !strings.Contains(err.Error(), "backend down") {
			t.Fatalf("result %v, error %v; want a plain (internal) error", res, err)
		}
	})
	for _, params := range []string{``, `{}`, `{"uri":""}`, `{"uri":5}`} {
		t.Run("bad params "+params, func(t *testing.T) {
			e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesRead, params)
		})
	}
}

func TestResourceTemplateParsing(t *testing.T) {
	read := func(context.Context, Session, string, map[string]string) ([]protocol.ResourceContents, error) {
		return nil, nil
	}
	bad := []string{
		"test://{id",            // unclosed brace
		"test://x/{id}/{rest",   // unclosed later
		"test://{a}{b}",         // adjacent variables
		"test://{+x}",           // reserved expansion
		"test://{#frag}",        // fragment expansion
		"test://{a,b}",          // variable list
		"test://{x*}",           // explode modifier
		"test://{x:3}",          // prefix modifier
		"test://{}",             // empty name
		"test://{?q}",           // query expansion
		"test://{a}/{b}{c}/end", // adjacent later on
	}
	for _, tmpl := range bad {
		t.Run(tmpl, func(t *testing.T) {
			e := newEnv(t)
			err := e.s.AddResourceTemplate(ResourceTemplate{
				ResourceTemplate: protocol.ResourceTemplate{URITemplate: tmpl, Name: "t"},
				Read:             read,
			})
			if err == nil {
				t.Fatalf("AddResourceTemplate(%q) succeeded", tmpl)
			}
			if !strings.Contains(err.Error(), tmpl) {
				t.Errorf("error %q does not name the template", err)
			}
			if m := members(t, e.ok(t, protocol.MethodResourcesTemplatesList, "")); string(m["resourceTemplates"]) != "[]" {
				t.Errorf("a rejected template is listed: %s", m["resourceTemplates"])
			}
		})
	}
	for _, good := range []string{"test://plain", "test://{id}", "test://{a}/{b}", "x://{a}-{b}.json", "test://{snake_case}/{Camel9}"} {
		e := newEnv(t)
		if err := e.s.AddResourceTemplate(ResourceTemplate{ResourceTemplate: protocol.ResourceTemplate{URITemplate: good, Name: "t"}, Read: read}); err != nil {
			t.Errorf("AddResourceTemplate(%q): %v", good, err)
		}
	}
	t.Run("required fields", func(t *testing.T) {
		e := newEnv(t)
		for _, rt := range []ResourceTemplate{
			{ResourceTemplate: protocol.ResourceTemplate{Name: "t"}, Read: read},
			{ResourceTemplate: protocol.ResourceTemplate{URITemplate: "test://{x}"}, Read: read},
			{ResourceTemplate: protocol.ResourceTemplate{URITemplate: "test://{x}", Name: "t"}},
		} {
			if err := e.s.AddResourceTemplate(rt); err == nil {
				t.Errorf("AddResourceTemplate(%+v) succeeded", rt.ResourceTemplate)
			}
		}
	})
}

func TestResourceRegistration(t *testing.T) {
	e := newEnv(t)
	readFn := func(context.Context, Session) ([]protocol.ResourceContents, error) { return nil, nil }
	for _, r := range []Resource{
		{Resource: protocol.Resource{Name: "n"}, Read: readFn},
		{Resource: protocol.Resource{URI: "test://x"}, Read: readFn},
		{Resource: protocol.Resource{URI: "test://x", Name: "n"}},
		{Resource: protocol.Resource{URI: "test://%zz", Name: "n"}, Read: readFn},
	} {
		if err := e.s.AddResource(r); err == nil {
			t.Errorf("AddResource(%+v) succeeded", r.Resource)
		}
	}
	if err := e.s.AddResource(staticResource("test://dup", "1")); err != nil {
		t.Fatal(err)
	}
	if err := e.s.AddResource(staticResource("test://dup", "2")); err == nil {
		t.Error("duplicate URI registered")
	}
	res := unmarshal[protocol.ReadResourceResult](t, e.ok(t, protocol.MethodResourcesRead, `{"uri":"test://dup"}`))
	if len(res.Contents) != 1 || res.Contents[0].Text != "1" {
		t.Errorf("contents = %+v", res.Contents)
	}
}

func TestResourceSubscriptions(t *testing.T) {
	e, _ := resourceEnv(t)
	if raw := e.ok(t, protocol.MethodResourcesSubscribe, `{"uri":"test://static/a"}`); string(raw) != "{}" {
		t.Errorf("subscribe result = %s, want {}", raw)
	}
	if raw := e.ok(t, protocol.MethodResourcesUnsubscribe, `{"uri":"test://static/b"}`); string(raw) != "{}" {
		t.Errorf("unsubscribe result = %s, want {}", raw)
	}
	subs, unsubs := e.sess.subscriptions()
	if !slices.Equal(subs, []string{"test://static/a"}) || !slices.Equal(unsubs, []string{"test://static/b"}) {
		t.Fatalf("session saw subscribe %v, unsubscribe %v", subs, unsubs)
	}

	for _, method := range []string{protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe} {
		for _, params := range []string{``, `{}`, `{"uri":""}`, `{"uri":["x"]}`} {
			t.Run(method+" "+params, func(t *testing.T) {
				e.fails(t, protocol.CodeInvalidParams, method, params)
			})
		}
	}

	e.sess.subErr = errors.New("too many subscriptions")
	perr := e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesSubscribe, `{"uri":"test://static/c"}`)
	if !strings.Contains(perr.Message, "too many subscriptions") {
		t.Errorf("message %q does not carry the session's reason", perr.Message)
	}
	if subs, _ := e.sess.subscriptions(); len(subs) != 1 {
		t.Errorf("subscriptions = %v", subs)
	}
}

// Subscriptions live as long as the client session, so what one may hold is
// bounded: a URI of at most 2048 bytes, with a scheme. Patterns need not name
// a registered resource. Nothing refused reaches the session.
func TestResourceSubscriptions_URIBounded(t *testing.T) {
	at := "test://x/" + strings.Repeat("a", 2048-len("test://x/"))
	for _, tc := range []struct {
		name, uri string
		ok        bool
	}{
		{"registered resource", "test://static/a", true},
		{"unregistered", "test://nowhere", true},
		{"pattern", "stale://memory.*", true},
		{"urn", "urn:example:thing", true},
		{"exactly 2048 bytes", at, true},
		{"2049 bytes", at + "a", false},
		{"a megabyte", "test://x/" + strings.Repeat("a", 1<<20), false},
		{"relative path", "static/a", false},
		{"absolute path, no scheme", "/static/a", false},
		{"host, no scheme", "//host/path", false},
		{"bare word", "memory", false},
		{"leading space", " test://static/a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := resourceEnv(t)
			b, err := json.Marshal(map[string]string{"uri": tc.uri})
			if err != nil {
				t.Fatal(err)
			}
			params := string(b)
			if tc.ok {
				e.ok(t, protocol.MethodResourcesSubscribe, params)
				if subs, _ := e.sess.subscriptions(); !slices.Equal(subs, []string{tc.uri}) {
					t.Errorf("session holds %d subscriptions, want the one", len(subs))
				}
				return
			}
			e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesSubscribe, params)
			if subs, _ := e.sess.subscriptions(); len(subs) != 0 {
				t.Errorf("a refused subscription reached the session (%d held)", len(subs))
			}
			// Unsubscribing is always fine: it frees, never holds.
			e.ok(t, protocol.MethodResourcesUnsubscribe, params)
		})
	}
}
