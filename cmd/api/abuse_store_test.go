package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// storeFailure is the envelope's error as the storage tests read it: the
// code, the message and the field the store named.
type storeFailure struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Context struct {
			Field string `json:"field"`
		} `json:"context"`
	} `json:"error"`
}

// callRaw runs a tool with arguments given as raw JSON (which a Go map
// could not carry: 1e131071 is no float64, "\udfff" no Go string), checks
// the envelope, and returns it with the exact text of its first block.
func callRaw(t *testing.T, cs *mcp.ClientSession, name, args string) (storeFailure, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	envelope(t, res)
	blocks := res.Content
	if len(blocks) > 1 && strings.HasPrefix(blocks[0].(*mcp.TextContent).Text, "[System: ") {
		blocks = blocks[1:]
	}
	text := blocks[0].(*mcp.TextContent).Text
	var env storeFailure
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatalf("envelope %q: %v", text, err)
	}
	return env, text
}

// wantInvalid fails the test unless env is INVALID_INPUT on field, with a
// message saying reason.
func wantInvalid(t *testing.T, what string, env storeFailure, field, reason string) {
	t.Helper()
	if env.Success || env.Error.Code != "INVALID_INPUT" || env.Error.Context.Field != field || !strings.Contains(env.Error.Message, reason) {
		t.Errorf("%s: got success=%v %s on %q: %q; want INVALID_INPUT on %q saying %q",
			what, env.Success, env.Error.Code, env.Error.Context.Field, env.Error.Message, field, reason)
	}
}

// redisValueSizes returns the length of every string under prefix.
func redisValueSizes(t *testing.T, addr, prefix string) map[string]int64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	sizes := map[string]int64{}
	iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		if typ, _ := rdb.Type(ctx, iter.Val()).Result(); typ == "string" {
			sizes[iter.Val()] = rdb.StrLen(ctx, iter.Val()).Val()
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return sizes
}

// Numbers that expand: jsonb keeps 1e131071 as a 131,072-digit numeric, so
// a 16 KB memory_store used to become 131 MB on every read (and in Redis),
// and 888 bytes of agent metadata 6.4 MB. Both stores now refuse such
// numbers with INVALID_INPUT naming the path and the limit, store nothing,
// and bound what they keep by store.maxValueBytes as stored; Redis never
// holds a value longer than redis.maxValueBytes.
func TestAbuse_ExpandingNumbersRefused(t *testing.T) {
	cfg := pgConfig(t)
	rs := redistest.Start(t)
	cfg.RedisURL = "redis://" + rs.Addr() + "/0"
	cfg.Redis.MaxValueBytes = 64 << 10
	url, _ := runServer(t, cfg, io.Discard)
	cs := connect(t, url)

	var thousand strings.Builder
	for i := range 1000 {
		if i > 0 {
			thousand.WriteByte(',')
		}
		fmt.Fprintf(&thousand, `"n%03d":1e131071`, i)
	}
	// The tools' own limits allow arrays of 100 elements: 888 bytes in two.
	fifty := strings.TrimSuffix(strings.Repeat("1e65535,", 54), ",")
	metadata := `{"x":[` + fifty + `],"y":[` + fifty + `]}`
	hundred := `[` + strings.TrimSuffix(strings.Repeat("1e399,", 100), ",") + `]`
	written := `[` + strings.TrimSuffix(strings.Repeat(hundred+",", 27), ",") + `]`
	// Within every limit, but longer than redis.maxValueBytes.
	large := `{"a":"` + strings.Repeat("x", 60<<10) + `","b":"` + strings.Repeat("y", 60<<10) + `"}`

	underAttack(t, url, "", func() {
		env, _ := callRaw(t, cs, "memory_store", `{"key":"big","value":{`+thousand.String()+`}}`)
		wantInvalid(t, "a thousand 1e131071", env, "/value/n000",
			"is a number whose decimal form (as it is stored) is 131072 characters long; the limit is 400")
		env, _ = callRaw(t, cs, "memory_store", `{"key":"deep","value":{"items":[1,2,3,1e131071]}}`)
		wantInvalid(t, "one 1e131071 in a list", env, "/value/items/3", "the limit is 400")
		env, _ = callRaw(t, cs, "memory_store", `{"key":"written","value":`+written+`}`)
		wantInvalid(t, "16 KB of 1e399", env, "value",
			fmt.Sprintf("is longer than the limit of %d bytes as it is stored", cfg.Store.MaxValueBytes))
		env, _ = callRaw(t, cs, "agent_register", `{"agentId":"a1","description":"d","metadata":`+metadata+`}`)
		wantInvalid(t, "888 bytes of agent metadata", env, "/metadata/x/0", "65536 characters long; the limit is 400")
		env, _ = callRaw(t, cs, "session_create", `{"task":"t","initiator":"i","metadata":{"n":1e131071}}`)
		wantInvalid(t, "session metadata", env, "/metadata/n", "the limit is 400")

		for _, c := range []struct{ tool, args string }{
			{"memory_retrieve", `{"key":"big"}`}, {"memory_retrieve", `{"key":"deep"}`},
			{"memory_retrieve", `{"key":"written"}`}, {"agent_get", `{"agentId":"a1"}`},
		} {
			if env, _ := callRaw(t, cs, c.tool, c.args); env.Success || env.Error.Code != "NOT_FOUND" {
				t.Errorf("%s %s after the refusal: success=%v %s; want NOT_FOUND", c.tool, c.args, env.Success, env.Error.Code)
			}
		}

		// A value within the store's limits but over redis.maxValueBytes
		// is served, twice (the response's own limits cut its strings),
		// and never written to Redis.
		if env, _ := callRaw(t, cs, "memory_store", `{"key":"large","value":`+large+`}`); !env.Success {
			t.Fatalf("memory_store of a 100 KB value: %s %s", env.Error.Code, env.Error.Message)
		}
		for range 2 {
			if env, _ := callRaw(t, cs, "memory_retrieve", `{"key":"large"}`); !env.Success {
				t.Fatalf("memory_retrieve of the 100 KB value: %s %s", env.Error.Code, env.Error.Message)
			}
		}
	})

	if n := metric(t, url, "mcp_cache_redis_oversized_total"); n == 0 {
		t.Error("mcp_cache_redis_oversized_total is 0 after a value over redis.maxValueBytes was stored and read")
	}
	sizes := redisValueSizes(t, rs.Addr(), cfg.Redis.KeyPrefix+"c:")
	if len(sizes) == 0 {
		t.Fatal("the cache wrote nothing to Redis: the check below checks nothing")
	}
	for k, n := range sizes {
		if n > int64(cfg.Redis.MaxValueBytes) {
			t.Errorf("Redis key %s holds %d bytes; redis.maxValueBytes is %d", k, n, cfg.Redis.MaxValueBytes)
		}
	}
}

// Unpaired surrogates and the other inputs the two stores used to treat
// differently: PostgreSQL refused "\udfff" (22P02: INTERNAL_ERROR and an
// error log line) while the embedded store kept it. Both stores now answer
// INVALID_INPUT naming the path, log nothing, and serve the values they
// accept as the same text.
func TestAbuse_UnpairedSurrogatesRefusedByBothStores(t *testing.T) {
	refused := []struct{ name, value, field, reason string }{
		{"an unpaired low surrogate", `{"a":"x\udfff"}`, "/value/a", `unpaired UTF-16 surrogate (\udfff)`},
		{"an unpaired high surrogate", `["\ud800"]`, "/value/0", `unpaired UTF-16 surrogate (\ud800)`},
		{"a high surrogate before a non-surrogate", `["\ud800\u0041"]`, "/value/0", `unpaired UTF-16 surrogate (\ud800)`},
		{"a surrogate in a member name", `{"\udfff":1}`, "/value", `has a member name containing an unpaired UTF-16 surrogate`},
		{"NUL", `{"s":"a\u0000b"}`, "/value/s", `\u0000 (NUL), which cannot be stored`},
		{"duplicate member names", `{"a":1,"\u0061":2}`, "/value", `has two members named "a"`},
	}
	// Accepted by both, and rewritten by jsonb: key order, escapes,
	// numbers in decimal form, no negative zero.
	const accepted = `{"bb":[1E2,1.0,-0,1.50,100e-2],"a":"\u00e9\/\u001F","é":{"y":1,"x":2}}`
	const canonical = `{"a":"é/\u001f","bb":[100,1.0,0,1.50,1.00],"é":{"x":2,"y":1}}`

	served := map[string]string{}
	for _, backend := range []string{"postgres", "embedded"} {
		t.Run(backend, func(t *testing.T) {
			cfg := config.Default()
			if backend == "postgres" {
				cfg = pgConfig(t)
			}
			logs := &syncBuffer{}
			url, stop := runServer(t, cfg, logs)
			cs := connect(t, url)
			underAttack(t, url, "", func() {
				for i, c := range refused {
					env, _ := callRaw(t, cs, "memory_store", fmt.Sprintf(`{"key":"k%d","value":%s}`, i, c.value))
					wantInvalid(t, c.name, env, c.field, c.reason)
					if env, _ := callRaw(t, cs, "memory_retrieve", fmt.Sprintf(`{"key":"k%d"}`, i)); env.Error.Code != "NOT_FOUND" {
						t.Errorf("%s: stored anyway (%s)", c.name, env.Error.Code)
					}
				}
				if env, _ := callRaw(t, cs, "memory_store", `{"key":"ok","value":`+accepted+`}`); !env.Success {
					t.Fatalf("memory_store: %s %s", env.Error.Code, env.Error.Message)
				}
				env, _ := callRaw(t, cs, "memory_retrieve", `{"key":"ok"}`)
				var entry struct {
					Value json.RawMessage `json:"value"`
				}
				if err := json.Unmarshal(env.Data, &entry); err != nil || !env.Success {
					t.Fatalf("memory_retrieve: %s %v", env.Error.Code, err)
				}
				served[backend] = string(entry.Value)
			})
			stop() // flushes the log
			if !strings.Contains(logs.String(), `"tool":"memory.store"`) {
				t.Fatalf("the log has no line of the calls: the check below checks nothing:\n%s", logs)
			}
			if strings.Contains(logs.String(), `"level":"error"`) {
				t.Errorf("the refusals were logged as errors:\n%s", logs)
			}
		})
	}
	for backend, text := range served {
		if text != canonical {
			t.Errorf("%s serves %s, want %s", backend, text, canonical)
		}
	}
}

// A store error that reaches the log (an INTERNAL_ERROR) names the
// operation and the class of the failure, never the memory key,
// namespace or value: here PostgreSQL refuses the write with a message
// quoting all three, as its input-syntax errors quote the input.
func TestAbuse_StoreErrorsKeepKeysOutOfTheLog(t *testing.T) {
	cfg := pgConfig(t)
	logs := &syncBuffer{}
	url, stop := runServer(t, cfg, logs)
	conn, err := pgx.Connect(context.Background(), cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused %/%: %', NEW.namespace, NEW.key, NEW.value USING ERRCODE = '22023'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON memory_entries FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, url)
	underAttack(t, url, "", func() {
		for i := range 20 {
			env, _ := callRaw(t, cs, "memory_store",
				fmt.Sprintf(`{"namespace":"ns-private","key":"key-private-%d","value":"value-private"}`, i))
			if env.Success || env.Error.Code != "INTERNAL_ERROR" || strings.Contains(env.Error.Message, "private") {
				t.Fatalf("memory_store the database refuses: success=%v %s %q", env.Success, env.Error.Code, env.Error.Message)
			}
		}
	})
	stop() // flushes the log
	out := logs.String()
	if !strings.Contains(out, "put memory entry") || !strings.Contains(out, "SQLSTATE 22023") {
		t.Errorf("the log does not name the operation and the failure's class:\n%s", out)
	}
	if strings.Contains(out, "private") {
		t.Errorf("the log carries a memory key, namespace or value:\n%s", out)
	}
}
