package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Tests of the list order and its cursors
// (docs/adr/0052-list-order-and-cursors.md).

// groupTool is a tool of group named canonical.
func groupTool(group, canonical string) Tool {
	t := echoTool(canonical)
	t.Group = group
	return t
}

// regStep is one change a replica made to its tools: Add(tools) when
// group is "", else ReplaceGroup(group, tools).
type regStep struct {
	group string
	names []string // canonical
}

func add(names ...string) regStep { return regStep{names: names} }

func replace(group string, names ...string) regStep { return regStep{group: group, names: names} }

// replica is a server (PageSize 2) whose tools came from steps, in order.
func replica(t *testing.T, steps ...regStep) *env {
	t.Helper()
	e := newEnv(t)
	for _, st := range steps {
		tools := make([]Tool, len(st.names))
		for i, n := range st.names {
			tools[i] = groupTool(st.group, n)
		}
		if st.group == "" {
			if err := e.s.Tools().Add(tools...); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, errs := e.s.Tools().ReplaceGroup(st.group, tools); errs != nil {
			t.Fatal(errs)
		}
	}
	return e
}

// listField is what a list method's result holds its items in, and the
// member that names an item.
var listField = map[string][2]string{
	protocol.MethodToolsList:              {"tools", "name"},
	protocol.MethodPromptsList:            {"prompts", "name"},
	protocol.MethodResourcesList:          {"resources", "uri"},
	protocol.MethodResourcesTemplatesList: {"resourceTemplates", "uriTemplate"},
}

// walk lists method from the first page to the last, page i from
// from(i), and returns the names listed and the raw pages.
func walk(t *testing.T, method string, from func(page int) *env) (names []string, pages []string) {
	t.Helper()
	field := listField[method]
	params := `{}`
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("%s does not end: %v", method, names)
		}
		raw := from(i).ok(t, method, params)
		pages = append(pages, string(raw))
		m := members(t, raw)
		for _, it := range unmarshal[[]map[string]json.RawMessage](t, m[field[0]]) {
			names = append(names, unmarshal[string](t, it[field[1]]))
		}
		next, ok := m["nextCursor"]
		if !ok {
			return names, pages
		}
		params = `{"cursor":` + string(next) + `}`
	}
}

// TestToolsListOrder: replicas that came by the same tools in different
// orders — built-ins registered in another order, upstream groups
// discovered or replaced in another order, an upstream listing its tools
// in another order — serve the same pages, byte for byte, cursors
// included: the server's own tools first, then each group's, by exposed
// name.
func TestToolsListOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []regStep
		want string
	}{
		{
			"built-ins registered in another order",
			[]regStep{add("x.b", "x.a", "y.c")},
			[]regStep{add("y.c", "x.a"), add("x.b")},
			"x_a,x_b,y_c",
		},
		{
			"groups discovered in another order",
			[]regStep{add("own.tool"), replace("upstream", "b.fetch", "a.search"), replace("zeta", "z.one")},
			[]regStep{replace("zeta", "z.one"), replace("upstream", "a.search", "b.fetch"), add("own.tool")},
			"own_tool,a_search,b_fetch,z_one",
		},
		{
			"a group replaced again does not move",
			[]regStep{add("own.tool"), replace("upstream", "a.search"), replace("zeta", "z.one"), replace("upstream", "a.search", "c.get")},
			[]regStep{add("own.tool"), replace("zeta", "z.one"), replace("upstream", "c.get", "a.search")},
			"own_tool,a_search,c_get,z_one",
		},
		{
			"an upstream's tools in another order",
			[]regStep{replace("upstream", "s.d", "s.c", "s.b", "s.a")},
			[]regStep{replace("upstream", "s.a", "s.b", "s.c", "s.d")},
			"s_a,s_b,s_c,s_d",
		},
		{
			"bytewise, not by canonical name",
			// "a.z" sorts before "a_b.c" canonically ('.' < '_'), but
			// clients see the exposed names a_z and a_b_c.
			[]regStep{add("a.z", "a_b.c", "A.c")},
			[]regStep{add("A.c"), add("a_b.c"), add("a.z")},
			"A_c,a_b_c,a_z",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := replica(t, tc.a...), replica(t, tc.b...)
			namesA, pagesA := walk(t, protocol.MethodToolsList, func(int) *env { return a })
			namesB, pagesB := walk(t, protocol.MethodToolsList, func(int) *env { return b })
			if got := strings.Join(namesA, ","); got != tc.want {
				t.Errorf("tools/list = %s, want %s", got, tc.want)
			}
			if !slices.Equal(pagesA, pagesB) {
				t.Errorf("the replicas' pages differ:\n  %s\n  %s", strings.Join(pagesA, "\n  "), strings.Join(pagesB, "\n  "))
			}
			if got := strings.Join(namesB, ","); got != tc.want {
				t.Errorf("the other replica's tools/list = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestToolsListAcrossReplicas: a client's pages land on replicas in
// turn. Whatever tools each has, a tool every replica has is listed
// exactly once, no tool twice, and in order — also when the tool the
// cursor names is gone from the next replica.
func TestToolsListAcrossReplicas(t *testing.T) {
	all := []regStep{add("own.a", "own.b"), replace("upstream", "s.a", "s.b", "s.c", "s.d")}
	withOwnC := append(slices.Clone(all), add("own.c"))
	for _, tc := range []struct {
		name     string
		replicas [][]regStep // page i comes from replicas[i%len(replicas)]
		want     string
	}{
		{"same tools on both", [][]regStep{all, all}, "own_a,own_b,s_a,s_b,s_c,s_d"},
		{"same tools, registered differently", [][]regStep{all, {replace("upstream", "s.d", "s.c", "s.b", "s.a"), add("own.b", "own.a")}},
			"own_a,own_b,s_a,s_b,s_c,s_d"},
		{"the cursor's tool is gone", [][]regStep{all, {add("own.a"), replace("upstream", "s.a", "s.b", "s.c", "s.d")}},
			"own_a,own_b,s_a,s_b,s_c,s_d"},
		{"a tool already listed is gone", [][]regStep{all, {add("own.b"), replace("upstream", "s.a", "s.b", "s.c", "s.d")}},
			"own_a,own_b,s_a,s_b,s_c,s_d"},
		{"a tool not yet listed is gone", [][]regStep{all, {add("own.a", "own.b"), replace("upstream", "s.a", "s.c", "s.d")}},
			"own_a,own_b,s_a,s_c,s_d"},
		{"a tool added before the cursor", [][]regStep{all, {add("own.0", "own.a", "own.b"), replace("upstream", "s.a", "s.b", "s.c", "s.d")}},
			"own_a,own_b,s_a,s_b,s_c,s_d"},
		{"a tool added after the cursor", [][]regStep{all, {add("own.a", "own.b", "own.c"), replace("upstream", "s.a", "s.b", "s.c", "s.d")}},
			"own_a,own_b,own_c,s_a,s_b,s_c,s_d"},
		{"a group gone", [][]regStep{all, {add("own.a", "own.b")}}, "own_a,own_b"},
		{"a group come", [][]regStep{{add("own.a", "own.b", "own.c")}, withOwnC, withOwnC, withOwnC},
			"own_a,own_b,own_c,s_a,s_b,s_c,s_d"},
		{"a group come before the cursor's", [][]regStep{all, all, append(slices.Clone(all), replace("other", "o.a"))},
			"own_a,own_b,s_a,s_b,s_c,s_d"},
		{"a group come after the cursor", [][]regStep{all, append(slices.Clone(all), replace("other", "o.a"))},
			"own_a,own_b,o_a,s_a,s_b,s_c,s_d"},
		{"the cursor's group gone, another after it", [][]regStep{{add("own.a"), replace("upstream", "s.a", "s.b", "s.c")}, {add("own.a"), replace("zeta", "z.a")}},
			"own_a,s_a,z_a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := make([]*env, len(tc.replicas))
			for i, steps := range tc.replicas {
				envs[i] = replica(t, steps...)
			}
			names, _ := walk(t, protocol.MethodToolsList, func(page int) *env { return envs[page%len(envs)] })
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("tools/list = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestToolsListSetChangesBetweenPages: a group replaced on the same
// replica between two pages neither repeats nor skips the tools it
// still has.
func TestToolsListSetChangesBetweenPages(t *testing.T) {
	e := replica(t, add("own.a"), replace("upstream", "s.a", "s.b", "s.c", "s.d", "s.e"))
	var names []string
	steps := [][]string{
		{"s.b", "s.c", "s.d", "s.e"},                 // s.a, listed, is gone
		{"s.0", "s.b", "s.c", "s.d", "s.e", "s.f"},   // s.0 comes before the cursor, s.f after
		{"s.0", "s.b", "s.e", "s.f", "s.g", "s.h.i"}, // s.c and s.d, listed, are gone
	}
	params := `{}`
	for page := 0; ; page++ {
		res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, params))
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			break
		}
		params = `{"cursor":"` + res.NextCursor + `"}`
		if page < len(steps) {
			tools := make([]Tool, len(steps[page]))
			for i, n := range steps[page] {
				tools[i] = groupTool("upstream", n)
			}
			if _, errs := e.s.Tools().ReplaceGroup("upstream", tools); errs != nil {
				t.Fatal(errs)
			}
		}
	}
	if got, want := strings.Join(names, ","), "own_a,s_a,s_b,s_c,s_d,s_e,s_f,s_g,s_h_i"; got != want {
		t.Fatalf("tools/list = %s, want %s", got, want)
	}
}

// TestToolsListAcrossReplicasProperty: random tool sets on random
// replicas, pages from a random one each time: no tool is listed twice,
// every tool all of them have is listed, and the list is in order.
func TestToolsListAcrossReplicasProperty(t *testing.T) {
	type tool struct{ group, canonical string }
	var universe []tool
	for _, g := range []string{"", "upstream", "zeta"} {
		for i := range 6 {
			universe = append(universe, tool{g, fmt.Sprintf("%s%d.t%d", strings.TrimSuffix(g, "stream"), i%3, i)})
		}
	}
	rng := rand.New(rand.NewPCG(7, 52))
	for iter := range 200 {
		envs := make([]*env, 1+rng.IntN(3))
		inAll := map[string]int{}
		for i := range envs {
			var steps []regStep
			byGroup := map[string][]string{}
			for _, tl := range universe {
				if rng.IntN(4) > 0 {
					byGroup[tl.group] = append(byGroup[tl.group], tl.canonical)
				}
			}
			groups := []string{"", "upstream", "zeta"}
			rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
			for _, g := range groups {
				names := byGroup[g]
				rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
				if len(names) > 0 {
					steps = append(steps, regStep{group: g, names: names})
				}
				for _, n := range names {
					inAll[strings.ReplaceAll(n, ".", "_")]++
				}
			}
			envs[i] = replica(t, steps...)
		}
		names, _ := walk(t, protocol.MethodToolsList, func(int) *env { return envs[rng.IntN(len(envs))] })
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("iteration %d: %s listed twice: %v", iter, n, names)
			}
			seen[n] = true
		}
		for n, count := range inAll {
			if count == len(envs) && !seen[n] {
				t.Fatalf("iteration %d: %s, which every replica has, is not listed: %v", iter, n, names)
			}
		}
		// In order: the group is the name's first letters here.
		group := func(n string) string {
			switch {
			case strings.HasPrefix(n, "up"):
				return "upstream"
			case strings.HasPrefix(n, "zeta"):
				return "zeta"
			}
			return ""
		}
		if !slices.IsSortedFunc(names, func(a, b string) int {
			return listKey{group(a), a}.compare(listKey{group(b), b})
		}) {
			t.Fatalf("iteration %d: not in order: %v", iter, names)
		}
	}
}

// fedReplica is a server with own prompts, resources and templates, and
// upstreams whose lists are given in the order of f's slices.
func fedReplica(t *testing.T, own []string, f *fakeFederated) *env {
	t.Helper()
	e := newEnv(t)
	for _, n := range own {
		if err := e.s.AddPrompt(plainPrompt(n, func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
			return &protocol.GetPromptResult{}, nil
		})); err != nil {
			t.Fatal(err)
		}
		if err := e.s.AddResource(staticResource("own://"+n, n)); err != nil {
			t.Fatal(err)
		}
		if err := e.s.AddResourceTemplate(recordingTemplate("own://"+n+"/{id}", &[]templateRead{})); err != nil {
			t.Fatal(err)
		}
	}
	e.s.SetFederated(f)
	return e
}

// upstreamLists is a fakeFederated listing prompts up_<n>, resources
// up://<n> and templates up://<n>/{id}, in the order of names.
func upstreamLists(names ...string) *fakeFederated {
	f := &fakeFederated{}
	for _, n := range names {
		f.prompts = append(f.prompts, protocol.Prompt{Name: "up_" + n, Raw: json.RawMessage(`{"name":"up_` + n + `"}`)})
		f.resources = append(f.resources, protocol.Resource{URI: "up://" + n, Raw: json.RawMessage(`{"uri":"up://` + n + `","name":"r"}`)})
		f.templates = append(f.templates, protocol.ResourceTemplate{URITemplate: "up://" + n + "/{id}", Raw: json.RawMessage(`{"uriTemplate":"up://` + n + `/{id}","name":"t"}`)})
	}
	return f
}

// TestFederatedListsAcrossReplicas: prompts/list, resources/list and
// resources/templates/list are in the same order on replicas whose own
// items were registered, and whose upstreams listed theirs, in other
// orders; a walk across replicas whose upstreams differ lists what both
// have exactly once.
func TestFederatedListsAcrossReplicas(t *testing.T) {
	type side struct {
		own, upstream []string
	}
	for _, tc := range []struct {
		name string
		a, b side
		want map[string]string // method: names, pages alternating between a and b
	}{
		{
			"same items, other orders",
			side{[]string{"b", "a"}, []string{"d", "c", "e"}},
			side{[]string{"a", "b"}, []string{"e", "c", "d"}},
			map[string]string{
				protocol.MethodPromptsList:            "a,b,up_c,up_d,up_e",
				protocol.MethodResourcesList:          "own://a,own://b,up://c,up://d,up://e",
				protocol.MethodResourcesTemplatesList: "own://a/{id},own://b/{id},up://c/{id},up://d/{id},up://e/{id}",
			},
		},
		{
			// up_d is only on a and up_g only on b: each is passed on
			// the other replica.
			"an upstream item gone and one come",
			side{[]string{"a"}, []string{"c", "d", "e", "f"}},
			side{[]string{"a"}, []string{"b", "c", "e", "f", "g"}},
			map[string]string{
				protocol.MethodPromptsList:            "a,up_c,up_e,up_f",
				protocol.MethodResourcesList:          "own://a,up://c,up://e,up://f",
				protocol.MethodResourcesTemplatesList: "own://a/{id},up://c/{id},up://e/{id},up://f/{id}",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fedReplica(t, tc.a.own, upstreamLists(tc.a.upstream...))
			b := fedReplica(t, tc.b.own, upstreamLists(tc.b.upstream...))
			for method, want := range tc.want {
				names, _ := walk(t, method, func(page int) *env { return []*env{a, b}[page%2] })
				if got := strings.Join(names, ","); got != want {
					t.Errorf("%s = %s, want %s", method, got, want)
				}
				if !sameSet(tc.a.own, tc.b.own) || !sameSet(tc.a.upstream, tc.b.upstream) {
					continue
				}
				_, pagesA := walk(t, method, func(int) *env { return a })
				_, pagesB := walk(t, method, func(int) *env { return b })
				if !slices.Equal(pagesA, pagesB) {
					t.Errorf("%s: the replicas' pages differ:\n  %s\n  %s", method, strings.Join(pagesA, "\n  "), strings.Join(pagesB, "\n  "))
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestResourcesListCursorIntoConcrete: when the lister's resources end
// exactly on a page, the next cursor is a position before the first
// concrete resource, which another replica continues from.
func TestResourcesListCursorIntoConcrete(t *testing.T) {
	a := fedReplica(t, []string{"a", "b"}, upstreamLists("c"))
	b := fedReplica(t, []string{"b", "a"}, upstreamLists("c"))
	a.s.SetResourceLister(numberLister{n: 2})
	b.s.SetResourceLister(numberLister{n: 2})
	names, _ := walk(t, protocol.MethodResourcesList, func(page int) *env { return []*env{a, b}[page%2] })
	if got, want := strings.Join(names, ","), "n://0,n://1,own://a,own://b,up://c"; got != want {
		t.Fatalf("resources/list = %s, want %s", got, want)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, k := range []listKey{
		{},
		{name: "memory_store"},
		{group: "upstream", name: "github_search"},
		{group: "a:b", name: "c:d"},
		{group: "12:", name: ""},
		{group: "", name: "up://x/{id}"},
		{group: strings.Repeat("g", 300), name: strings.Repeat("n", 3000)},
	} {
		for _, kind := range []listKind{kindTools, kindPrompts, kindResources, kindTemplates} {
			c := encodeCursor(kind, k)
			got, legacy, ok := decodeCursor(kind, c)
			if !ok || legacy || got != k {
				t.Errorf("decodeCursor(%s, encodeCursor(%+v)) = %+v, %v, %v", kind, k, got, legacy, ok)
			}
			if strings.ContainsAny(c, "=+/:") {
				t.Errorf("cursor %q is not unpadded base64url", c)
			}
		}
	}
}

// FuzzDecodeCursor: decodeCursor never panics; what it accepts is a
// cursor encodeCursor returns for the key it decodes to, byte for byte,
// so a cursor has one spelling; it never accepts an offset cursor of an
// earlier version.
func FuzzDecodeCursor(f *testing.F) {
	for _, seed := range []string{
		"", "garbage", "!!!", "=",
		encodeCursor(kindTools, listKey{name: "memory_store"}),
		encodeCursor(kindTools, listKey{group: "upstream", name: "a_b"}),
		encodeCursor(kindPrompts, listKey{}),
		base64.RawURLEncoding.EncodeToString([]byte("o1:2")),
		base64.RawURLEncoding.EncodeToString([]byte("k1t:01:xy")),
		base64.RawURLEncoding.EncodeToString([]byte("k1t:-1:xy")),
		base64.RawURLEncoding.EncodeToString([]byte("k1t:99999999999999999999:x")),
		base64.URLEncoding.EncodeToString([]byte("k1t:0:ab")),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		for _, kind := range []listKind{kindTools, kindPrompts, kindResources, kindTemplates} {
			k, legacy, ok := decodeCursor(kind, cursor)
			if legacy && ok {
				t.Fatalf("%q: both legacy and ok", cursor)
			}
			if !ok {
				if k != (listKey{}) {
					t.Fatalf("%q refused with a key %+v", cursor, k)
				}
				continue
			}
			if again := encodeCursor(kind, k); again != cursor {
				t.Fatalf("%q decodes to %+v, which encodes to %q", cursor, k, again)
			}
		}
	})
}

// FuzzCursorKey: any key survives a cursor, and the cursor is
// printable ASCII whatever the key holds.
func FuzzCursorKey(f *testing.F) {
	f.Add("", "memory_store")
	f.Add("upstream", "a:b")
	f.Add("3:", "\x00\xff")
	f.Fuzz(func(t *testing.T, group, name string) {
		k := listKey{group, name}
		c := encodeCursor(kindResources, k)
		if got, _, ok := decodeCursor(kindResources, c); !ok || got != k {
			t.Fatalf("%+v: decoded %+v, %v", k, got, ok)
		}
		if _, _, ok := decodeCursor(kindTools, c); ok {
			t.Fatalf("a resources/list cursor was taken for a tools/list one")
		}
		if !utf8.ValidString(c) || strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("cursor %q is not base64url", c)
		}
	})
}
