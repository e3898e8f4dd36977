package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// roundsUpstream is a modern go-sdk server whose tool book asks the
// client to confirm (an InputRequiredResult with an elicitation and its
// own requestState) before it books; sawCaps records the client
// capabilities of each call it got.
func roundsUpstream(t *testing.T, sawCaps *atomic.Value) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "travel", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "book", Description: "Books a trip once the user confirms.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"trip":{"type":"string"}},"required":["trip"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities]; ok {
				b, _ := json.Marshal(caps)
				sawCaps.Store(string(b))
			}
			var in struct{ Trip string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			if r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); ok && req.Params.RequestState == "trip="+in.Trip {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked " + in.Trip + ": " + r.Action}}}, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Book " + in.Trip + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}},
				RequestState: "trip=" + in.Trip,
			}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	return up.URL
}

// roundAnswer is what a round of a modern tools/call returns.
type roundAnswer struct {
	Result struct {
		ResultType    string                           `json:"resultType"`
		InputRequests map[string]protocol.InputRequest `json:"inputRequests"`
		RequestState  string                           `json:"requestState"`
		Content       []protocol.Content               `json:"content"`
		IsError       bool                             `json:"isError"`
	} `json:"result"`
	Error *protocol.Error `json:"error"`
}

// roundOf posts a modern tools/call of tool with args, declaring caps,
// plus extra members of params (a retry's), to url, and reads its answer.
func roundOf(t *testing.T, url string, id int, tool, args, caps, extra string) roundAnswer {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	a := post(t, url, "", "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool)
	var r roundAnswer
	if err := json.Unmarshal([]byte(a.body), &r); err != nil {
		t.Fatalf("round %d: %d %s", id, a.status, a.body)
	}
	return r
}

// A modern upstream's InputRequiredResult reaches the client through the
// gateway with the upstream's requestState wrapped in the gateway's
// sealed state; the client's retry, on another replica, carries its
// answer back to the upstream with the upstream's own state; tampered
// state, another call's state and answers the upstream did not ask for
// are handled as the pattern says (basic/patterns/mrtr). The official
// go-sdk client, modern with its automatic rounds and legacy through real
// elicitation requests, books through the gateway too.
func TestUpstreamRoundsPassThrough(t *testing.T) {
	var sawCaps atomic.Value
	upURL := roundsUpstream(t, &sawCaps)
	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "travel", URL: upURL}}
	cfg.RequestState.Key = strings.Repeat("r", requeststate.MinKeyBytes)
	var replicas []string
	for range 2 {
		url, _ := runServer(t, cfg, io.Discard)
		cs := connectIn(t, legacyEra, url, "", nil)
		waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "travel_book") })
		replicas = append(replicas, url)
	}

	const caps = `{"elicitation":{"form":{}}}`
	call := func(t *testing.T, url string, id int, extra string) roundAnswer {
		t.Helper()
		return roundOf(t, url, id, "travel_book", `{"trip":"lisbon"}`, caps, extra)
	}

	first := call(t, replicas[0], 1, "")
	if first.Error != nil || first.Result.ResultType != protocol.ResultInputRequired ||
		first.Result.InputRequests["confirm"].Method != protocol.MethodElicitationCreate || first.Result.RequestState == "" {
		t.Fatalf("first round: %+v", first)
	}
	if strings.Contains(first.Result.RequestState, "lisbon") {
		t.Errorf("the upstream's state reached the client readable: %q", first.Result.RequestState)
	}
	if got, _ := sawCaps.Load().(string); got != caps {
		t.Errorf("the upstream saw client capabilities %s, want the client's %s", got, caps)
	}
	var params struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(first.Result.InputRequests["confirm"].Params, &params); err != nil || params.Message != "Book lisbon?" {
		t.Errorf("the elicitation reached the client as %s", first.Result.InputRequests["confirm"].Params)
	}

	answers := `,"inputResponses":{"confirm":{"action":"accept","content":{}},"unasked":{"x":1}}`
	t.Run("retry on another replica", func(t *testing.T) {
		r := call(t, replicas[1], 2, answers+`,"requestState":"`+first.Result.RequestState+`"`)
		if r.Error != nil || r.Result.ResultType != protocol.ResultComplete || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "booked lisbon: accept" {
			t.Fatalf("retry: %+v", r)
		}
	})
	t.Run("retry without the state is asked again", func(t *testing.T) {
		r := call(t, replicas[1], 3, answers)
		if r.Error != nil || r.Result.ResultType != protocol.ResultInputRequired {
			t.Fatalf("retry without state: %+v", r)
		}
	})
	t.Run("tampered state", func(t *testing.T) {
		tok := []byte(first.Result.RequestState)
		tok[len(tok)/2] ^= 1
		r := call(t, replicas[1], 4, answers+`,"requestState":"`+string(tok)+`"`)
		if r.Error == nil || r.Error.Code != protocol.CodeInvalidParams {
			t.Fatalf("tampered state: %+v", r)
		}
	})
	t.Run("state of another call", func(t *testing.T) {
		r := roundOf(t, replicas[0], 5, "travel_book", `{"trip":"oslo"}`, caps, answers+`,"requestState":"`+first.Result.RequestState+`"`)
		if r.Error == nil || r.Error.Code != protocol.CodeInvalidParams {
			t.Fatalf("another call's state: %+v", r)
		}
	})

	bookWithSDK(t, replicas[0], "travel_book", "rome")
}

// legacyAsker is a go-sdk server of the legacy era (a stateful one does
// not serve 2026-07-28) whose tool book asks the client to confirm with
// elicitation/create inside the call, as legacy servers do.
func legacyAsker(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "agency", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "book", Description: "Books a trip once the user confirms.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"trip":{"type":"string"}},"required":["trip"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Trip string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Book " + in.Trip + "?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not asked: " + err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked " + in.Trip + ": " + r.Action}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	return up.URL
}

// A legacy upstream's elicitation, sent inside the call, reaches a modern
// client through the gateway as a round: the call is held, the client's
// retry hands its answer to the waiting upstream request, and the result
// follows; a retry without the answer is asked again; the official go-sdk
// client, in both eras, books through the gateway.
func TestLegacyUpstreamAsksModernClient(t *testing.T) {
	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "agency", URL: legacyAsker(t)}}
	url, _ := runServer(t, cfg, io.Discard)
	cs := connectIn(t, legacyEra, url, "", nil)
	waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "agency_book") })

	call := func(t *testing.T, id int, caps, extra string) roundAnswer {
		t.Helper()
		return roundOf(t, url, id, "agency_book", `{"trip":"porto"}`, caps, extra)
	}

	const caps = `{"elicitation":{}}`
	first := call(t, 1, caps, "")
	ask, ok := first.Result.InputRequests["input-0"]
	if first.Error != nil || first.Result.ResultType != protocol.ResultInputRequired || !ok || ask.Method != protocol.MethodElicitationCreate || first.Result.RequestState == "" {
		t.Fatalf("first round: %+v", first)
	}
	if !strings.Contains(string(ask.Params), "Book porto?") {
		t.Errorf("the elicitation reached the client as %s", ask.Params)
	}
	state := `,"requestState":"` + first.Result.RequestState + `"`
	again := call(t, 2, caps, `,"inputResponses":{"other":{"action":"decline"}}`+state)
	if again.Error != nil || again.Result.ResultType != protocol.ResultInputRequired || again.Result.InputRequests["input-0"].Method != protocol.MethodElicitationCreate {
		t.Fatalf("a retry without the answer: %+v", again)
	}
	done := call(t, 3, caps, `,"inputResponses":{"input-0":{"action":"accept","content":{}}},"requestState":"`+again.Result.RequestState+`"`)
	if done.Error != nil || done.Result.ResultType != protocol.ResultComplete || len(done.Result.Content) != 1 || done.Result.Content[0].Text != "booked porto: accept" {
		t.Fatalf("the answered round: %+v", done)
	}
	if gone := call(t, 4, caps, `,"inputResponses":{"input-0":{"action":"accept","content":{}}},"requestState":"`+again.Result.RequestState+`"`); gone.Error == nil || gone.Error.Code != protocol.CodeInvalidParams {
		t.Fatalf("the state of a call that ended, again: %+v", gone)
	}

	t.Run("client without elicitation is not asked", func(t *testing.T) {
		r := call(t, 5, `{}`, "")
		if r.Error != nil || r.Result.ResultType != protocol.ResultComplete || !r.Result.IsError || len(r.Result.Content) != 1 || !strings.Contains(r.Result.Content[0].Text, "not asked") {
			t.Fatalf("%+v", r)
		}
	})

	bookWithSDK(t, url, "agency_book", "faro")
}

// bookWithSDK calls tool with the official go-sdk client in both eras,
// confirming when asked: modern by its automatic rounds, legacy by
// answering elicitation/create.
func bookWithSDK(t *testing.T, url, tool, trip string) {
	t.Helper()
	confirm := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
	for _, era := range []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{{"go-sdk modern", modernEra}, {"go-sdk legacy", legacyEra}} {
		t.Run(era.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: confirm})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, era.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"trip": trip}})
			if err != nil {
				t.Fatal(err)
			}
			if text, _ := res.Content[0].(*mcp.TextContent); res.IsError || text == nil || text.Text != "booked "+trip+": accept" {
				t.Fatalf("result: %+v", res.Content[0])
			}
		})
	}
}

// A held call lives on the replica where it started; the client's retry
// on another replica is run there, through Redis, on one node and on a
// Cluster: each round of a call that asks twice lands on another of
// three replicas, and the call books. A retry of a call that has ended is
// refused wherever it lands (docs/adr/0055-multi-round-trip-requests.md).
func TestHeldCallAcrossReplicas(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		heldAcrossReplicas(t, "redis://"+redistest.Shared(t)+"/0", "")
	})
	t.Run("cluster", func(t *testing.T) {
		heldAcrossReplicas(t, redistest.ClusterURL(t), "cluster")
	})
}

func heldAcrossReplicas(t *testing.T, redisURL, mode string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "agency", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "book", Description: "Books a trip once the user confirms twice.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var got []string
			for _, q := range []string{"Sure?", "Really?"} {
				r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: q, RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
				if err != nil {
					return nil, err
				}
				got = append(got, r.Action)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked: " + strings.Join(got, ",")}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)

	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "agency", URL: up.URL}}
	cfg.RequestState.Key = strings.Repeat("h", requeststate.MinKeyBytes)
	cfg.RedisURL, cfg.Redis.Mode = redisURL, mode
	cfg.Redis.KeyPrefix = testKeyPrefix()
	var replicas []string
	for range 3 {
		url, _ := runServer(t, cfg, io.Discard)
		cs := connectIn(t, legacyEra, url, "", nil)
		waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "agency_book") })
		replicas = append(replicas, url)
	}
	call := func(t *testing.T, url string, id int, extra string) roundAnswer {
		t.Helper()
		return roundOf(t, url, id, "agency_book", `{}`, `{"elicitation":{}}`, extra)
	}

	r := call(t, replicas[0], 1, "")
	var last string
	for i, want := range []string{"Sure?", "Really?"} {
		ask := r.Result.InputRequests["input-"+strconv.Itoa(i)]
		if r.Error != nil || r.Result.ResultType != protocol.ResultInputRequired || !strings.Contains(string(ask.Params), want) {
			t.Fatalf("round %d: %+v", i+1, r)
		}
		last = `,"inputResponses":{"input-` + strconv.Itoa(i) + `":{"action":"accept","content":{}}},"requestState":"` + r.Result.RequestState + `"`
		r = call(t, replicas[i+1], i+2, last)
	}
	if r.Error != nil || r.Result.ResultType != protocol.ResultComplete || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "booked: accept,accept" {
		t.Fatalf("last round: %+v", r)
	}
	for i, url := range replicas {
		if again := call(t, url, 10+i, last); again.Error == nil || again.Error.Code != protocol.CodeInvalidParams {
			t.Fatalf("the last round's retry again, on replica %d: %+v", i+1, again)
		}
	}
}

// A round's state belongs to the upstream tool that asked: a retry by a
// bare name that, meanwhile, names another server's tool does not carry
// the first server's requestState, nor the answers the client gave to its
// questions, to the second (basic/patterns/mrtr: the client's answers are
// to the requests of the server that asked;
// docs/adr/0055-multi-round-trip-requests.md).
func TestUpstreamRoundStaysWithItsServer(t *testing.T) {
	var sawCaps atomic.Value
	travelURL := roundsUpstream(t, &sawCaps)
	// hotel books whenever it finds a confirmation, whatever its state
	// says: the spec lets a server keep no state.
	var hotelGot atomic.Value
	hotel := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "1.0.0"}, nil)
	hotel.AddTool(&mcp.Tool{Name: "book", InputSchema: json.RawMessage(`{"type":"object","properties":{"trip":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); ok {
				hotelGot.Store(r.Action + " " + req.Params.RequestState)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hotel booked"}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Book the hotel?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return hotel }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)

	cfg := config.Default()
	cfg.Admin.Token = "admin-secret"
	cfg.RequestState.Key = strings.Repeat("r", requeststate.MinKeyBytes)
	url, _ := runServer(t, cfg, io.Discard)
	base := strings.TrimSuffix(url, "/mcp")
	cs := connectIn(t, legacyEra, url, "", nil)
	if code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", "admin-secret", `{"id":"travel","url":"`+travelURL+`"}`); code != http.StatusCreated {
		t.Fatalf("add travel: %d %s", code, resp)
	}
	waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "travel_book") })

	const caps = `{"elicitation":{"form":{}}}`
	call := func(t *testing.T, id int, extra string) answer {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"book","arguments":{"trip":"lisbon"}` + extra +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
		return post(t, url, "", "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "book")
	}
	var first roundAnswer
	if a := call(t, 1, ""); json.Unmarshal([]byte(a.body), &first) != nil || first.Result.ResultType != protocol.ResultInputRequired {
		t.Fatalf("first round: %d %s", a.status, a.body)
	}

	if code, resp := adminDo(t, base, http.MethodDelete, "/admin/upstreams/travel", "admin-secret", ""); code != http.StatusNoContent {
		t.Fatalf("delete travel: %d %s", code, resp)
	}
	if code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", "admin-secret", `{"id":"hotel","url":"`+hs.URL+`"}`); code != http.StatusCreated {
		t.Fatalf("add hotel: %d %s", code, resp)
	}
	waitFor(t, func() bool {
		names := toolNames(t, cs)
		return slices.Contains(names, "hotel_book") && !slices.Contains(names, "travel_book")
	})

	a := call(t, 2, `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"`+first.Result.RequestState+`"`)
	var r roundAnswer
	if err := json.Unmarshal([]byte(a.body), &r); err != nil || r.Error == nil || r.Error.Code != protocol.CodeInvalidParams {
		t.Errorf("travel's round retried on hotel's tool: %d %s", a.status, a.body)
	}
	if got, _ := hotelGot.Load().(string); got != "" {
		t.Errorf("hotel got travel's confirmation and state: %q", got)
	}
}

// The client's answers reach the upstream as the client wrote them: the
// go-sdk client takes typed answers (an elicitation's content is a
// map[string]any), and an integer beyond float64's 53 bits, or a member
// the SDK's type lacks, must not be changed or dropped on the way
// (basic/patterns/mrtr: the retry carries the client's results).
func TestUpstreamRoundAnswersPassVerbatim(t *testing.T) {
	var sawCaps atomic.Value
	upURL := roundsUpstream(t, &sawCaps)
	target, err := neturl.Parse(upURL)
	if err != nil {
		t.Fatal(err)
	}
	var bodies atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "inputResponses") {
			bodies.Store(string(b))
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "travel", URL: proxy.URL}}
	cfg.RequestState.Key = strings.Repeat("r", requeststate.MinKeyBytes)
	url, _ := runServer(t, cfg, io.Discard)
	cs := connectIn(t, legacyEra, url, "", nil)
	waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "travel_book") })

	call := func(t *testing.T, id int, extra string) roundAnswer {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"travel_book","arguments":{"trip":"lisbon"}` + extra +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`
		a := post(t, url, "", "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "travel_book")
		var r roundAnswer
		if err := json.Unmarshal([]byte(a.body), &r); err != nil {
			t.Fatalf("round %d: %d %s", id, a.status, a.body)
		}
		return r
	}
	first := call(t, 1, "")
	if first.Result.ResultType != protocol.ResultInputRequired {
		t.Fatalf("first round: %+v", first)
	}
	const answer = `{"action":"accept","content":{"account":12345678901234567891},"note":"kept"}`
	r := call(t, 2, `,"inputResponses":{"confirm":`+answer+`},"requestState":"`+first.Result.RequestState+`"`)
	if r.Error != nil || r.Result.ResultType != protocol.ResultComplete {
		t.Fatalf("retry: %+v", r)
	}
	got, _ := bodies.Load().(string)
	var sent struct {
		Params struct {
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(got), &sent); err != nil || string(sent.Params.InputResponses["confirm"]) != answer {
		t.Errorf("the upstream got the answer as %s, want %s", sent.Params.InputResponses["confirm"], answer)
	}
}

// The gateway carries an upstream's rounds for tools/call only: on
// prompts/get and resources/read it tells a modern upstream that the
// client it asks for declared no capability (an empty clientCapabilities,
// not the go-sdk's default of the gateway's own), so the upstream answers
// without asking rather than asking for what the gateway then refuses
// (basic/patterns/mrtr: a server must not ask for what the client did not
// declare; docs/adr/0055-multi-round-trip-requests.md).
func TestUpstreamPromptsAndResourcesDeclareNoInput(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "travel", Version: "1.0.0"}, nil)
	canAsk := func(meta mcp.Meta) bool {
		b, _ := json.Marshal(meta[mcp.MetaKeyClientCapabilities])
		var caps map[string]json.RawMessage
		_ = json.Unmarshal(b, &caps)
		_, ok := caps["elicitation"]
		return ok
	}
	ask := mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "For whom?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}
	s.AddPrompt(&mcp.Prompt{Name: "brief", Description: "A travel brief."}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if canAsk(req.Params.Meta) {
			return &mcp.GetPromptResult{InputRequests: ask}, nil
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "a brief for anyone"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///brief.txt", Name: "brief", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if canAsk(req.Params.Meta) {
			return &mcp.ReadResourceResult{InputRequests: ask}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///brief.txt", MIMEType: "text/plain", Text: "a brief for anyone"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)

	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "travel", URL: up.URL}}
	url, _ := runServer(t, cfg, io.Discard)
	cs := connectIn(t, legacyEra, url, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(t, func() bool {
		res, err := cs.ListPrompts(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "travel_brief" })
	})
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "travel_brief"})
	if err != nil || len(p.Messages) != 1 {
		t.Errorf("prompts/get: %v %+v", err, p)
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///brief.txt"})
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "a brief for anyone" {
		t.Errorf("resources/read: %v %+v", err, r)
	}
}
